package handlers

import (
	"admit/store"
	"admit/views"
	"context"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"path"
	"strconv"
	"strings"
)

// errAssetTooLarge is an upload over the asset bound.
var errAssetTooLarge = &httpError{http.StatusRequestEntityTooLarge, "payload_too_large",
	"A file is at most " + strconv.Itoa(store.MaxAssetBytes>>20) + " MiB."}

type multipartKey struct{}

// pendingMultipart is an upload's multipart stream, possibly with its first
// part already read.
type pendingMultipart struct {
	mr    *multipart.Reader
	first *multipart.Part
}

func (p *pendingMultipart) next() (*multipart.Part, error) {
	if p.first != nil {
		part := p.first
		p.first = nil
		return part, nil
	}
	return p.mr.NextPart()
}

// multipartCSRF lets a plain (no-JavaScript) upload form carry its CSRF
// token: the form's first field is "csrf", and this reads only that small
// part and hands it to the CSRF check as the X-CSRF-Token header. The rest
// of the stream is left for the handler, after the owner check, so nothing
// else of the body is read before authentication.
func (s *Server) multipartCSRF(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if mediaType(r) != "multipart/form-data" {
			next.ServeHTTP(w, r)
			return
		}
		mr, err := r.MultipartReader()
		if err != nil {
			next.ServeHTTP(w, r)
			return
		}
		pm := &pendingMultipart{mr: mr}
		if part, err := mr.NextPart(); err == nil {
			if part.FormName() == "csrf" && r.Header.Get("X-CSRF-Token") == "" {
				b, _ := io.ReadAll(io.LimitReader(part, 256))
				r.Header.Set("X-CSRF-Token", strings.TrimSpace(string(b)))
			} else {
				pm.first = part
			}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), multipartKey{}, pm)))
	})
}

// upload is a read private-asset upload.
type upload struct {
	name string
	data []byte
}

// readUpload reads the upload's fields: "file" (required), "name"
// (optional, defaults to the file's own name) and "csrf".
func readUpload(r *http.Request) (*upload, error) {
	pm, _ := r.Context().Value(multipartKey{}).(*pendingMultipart)
	if mediaType(r) != "multipart/form-data" || pm == nil {
		return nil, errContentType
	}
	up := &upload{}
	var filename string
	var gotFile, gotName bool
	for {
		part, err := pm.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, errAssetTooLarge
			}
			return nil, invalid("The upload could not be read.")
		}
		switch part.FormName() {
		case "csrf":
			_, err = io.Copy(io.Discard, io.LimitReader(part, 256))
		case "name":
			if gotName {
				return nil, invalid("The form repeats the field name.")
			}
			gotName = true
			var b []byte
			b, err = io.ReadAll(io.LimitReader(part, 256))
			up.name = strings.TrimSpace(string(b))
		case "file":
			if gotFile {
				return nil, invalid("Upload one file at a time.")
			}
			gotFile = true
			filename = part.FileName()
			up.data, err = io.ReadAll(io.LimitReader(part, store.MaxAssetBytes+1))
			if err == nil && len(up.data) > store.MaxAssetBytes {
				return nil, errAssetTooLarge
			}
		default:
			return nil, invalid("The upload has an unknown field.")
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, errAssetTooLarge
			}
			return nil, invalid("The upload could not be read.")
		}
	}
	if err := store.CheckUploadChosen(len(up.data)); err != nil {
		return nil, err
	}
	if up.name == "" {
		up.name = assetNameFrom(filename)
	}
	return up, nil
}

// assetNameFrom makes a safe asset name from an uploaded file's name.
func assetNameFrom(filename string) string {
	base := path.Base(strings.ReplaceAll(filename, `\`, "/"))
	var b strings.Builder
	for _, r := range base {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	name := strings.TrimLeft(b.String(), ".")
	if len(name) > 100 {
		name = name[len(name)-100:]
		name = strings.TrimLeft(name, ".")
	}
	return name
}

// sniffAssetType returns the content type the bytes show, if it is one the
// store accepts; the type the client claims is never trusted.
func sniffAssetType(data []byte) (string, error) {
	ct, _, _ := strings.Cut(http.DetectContentType(data), ";")
	if err := store.CheckAssetType(ct); err != nil {
		return "", err
	}
	return ct, nil
}

// storeUpload reads, checks and stores an upload, returning what was stored.
func (s *Server) storeUpload(r *http.Request) (*store.AssetInfo, error) {
	up, err := readUpload(r)
	if err != nil {
		return nil, err
	}
	ct, err := sniffAssetType(up.data)
	if err != nil {
		return nil, err
	}
	a := ownerActor(r)
	if err := s.db.PutAsset(r.Context(), a, r.PathValue("id"), up.name, ct, up.data); err != nil {
		return nil, err
	}
	assets, err := s.db.ListAssets(r.Context(), a, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	for i := range assets {
		if assets[i].Name == up.name {
			return &assets[i], nil
		}
	}
	return nil, errors.New("uploaded asset not read back")
}

// handleUploadAsset is the upload form: 303 to the program page.
func (s *Server) handleUploadAsset(w http.ResponseWriter, r *http.Request) error {
	info, err := s.storeUpload(r)
	if err != nil {
		// Drain what is left so the connection stays usable for the page.
		_, _ = io.Copy(io.Discard, r.Body)
		status, _, _ := classify(err)
		if status == http.StatusRequestEntityTooLarge || status == http.StatusUnsupportedMediaType {
			return s.rerenderAsset(w, r, status, err)
		}
		return s.rerenderProgram(w, r, err, func(v *views.ProgramPageView, msg string) { v.AssetError = msg })
	}
	s.cookieState(r).Flash = "File " + info.Name + " uploaded (" + views.Bytes(info.Size) + ")."
	return redirect(w, r, sectionURL(r.PathValue("id"), programSection(r)))
}

// rerenderAsset shows the program page with an upload error whose status
// formFailure does not cover (413, 415).
func (s *Server) rerenderAsset(w http.ResponseWriter, r *http.Request, status int, err error) error {
	v, lerr := s.programPageView(r, r.PathValue("id"))
	if lerr != nil {
		return lerr
	}
	_, _, v.AssetError = classify(err)
	return s.renderProgramPage(w, r, status, v)
}

// handleUploadAssetAPI stores a private asset: 201 {name, contentType, size, createdAt}.
func (s *Server) handleUploadAssetAPI(w http.ResponseWriter, r *http.Request) error {
	info, err := s.storeUpload(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, toAssetJSON(*info))
	return nil
}

// handleAssetsAPI lists a program's private assets.
func (s *Server) handleAssetsAPI(w http.ResponseWriter, r *http.Request) error {
	assets, err := s.db.ListAssets(r.Context(), ownerActor(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	out := make([]assetJSON, 0, len(assets))
	for _, a := range assets {
		out = append(out, toAssetJSON(a))
	}
	writeJSON(w, http.StatusOK, map[string]any{"assets": out})
	return nil
}
