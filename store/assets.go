package store

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"regexp"
	"time"
)

// MaxAssetBytes bounds one private asset (the schema checks it too).
const MaxAssetBytes = 2 << 20

// AssetTypes are the content types a private asset may have.
var AssetTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"}

var assetNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}$`)

// ValidAssetName reports whether name is a safe private asset file name.
func ValidAssetName(name string) bool { return assetNamePattern.MatchString(name) }

// AssetInfo describes a private asset without its bytes.
type AssetInfo struct {
	Name        string
	ContentType string
	Size        int
	CreatedAt   time.Time
}

// decodeAssetInfos reads the JSON array of [name, content type, size,
// created at] tuples that ReadPrivateContent's statement builds.
func decodeAssetInfos(list string) ([]AssetInfo, error) {
	var raw [][4]json.RawMessage
	if err := json.Unmarshal([]byte(list), &raw); err != nil {
		return nil, fmt.Errorf("decode asset list: %w", err)
	}
	var out []AssetInfo
	for _, t := range raw {
		var a AssetInfo
		var created int64
		for i, dst := range []any{&a.Name, &a.ContentType, &a.Size, &created} {
			if err := json.Unmarshal(t[i], dst); err != nil {
				return nil, fmt.Errorf("decode asset list: %w", err)
			}
		}
		a.CreatedAt = FromMillis(created)
		out = append(out, a)
	}
	return out, nil
}

func assetInfos(ctx context.Context, tx *Tx, programID string) ([]AssetInfo, error) {
	rows, err := tx.QueryContext(ctx, `SELECT name, content_type, octet_length(data), created_at FROM private_assets
		WHERE program_id = ? ORDER BY name`, programID)
	if err != nil {
		return nil, fmt.Errorf("list assets: %w", err)
	}
	defer rows.Close()
	var out []AssetInfo
	for rows.Next() {
		var a AssetInfo
		var c int64
		if err := rows.Scan(&a.Name, &a.ContentType, &a.Size, &c); err != nil {
			return nil, err
		}
		a.CreatedAt = FromMillis(c)
		out = append(out, a)
	}
	return out, rows.Err()
}

// PutAsset stores (or replaces) a private asset of the program. The caller
// checked the content type against the bytes.
func (db *DB) PutAsset(ctx context.Context, a Actor, programID, name, contentType string, data []byte) error {
	if !ValidAssetName(name) {
		return Errorf(EINVALID, "A file name is 1–100 letters, digits, dots, hyphens or underscores, not starting with a dot.")
	}
	if !oneOf(contentType, AssetTypes) {
		return Errorf(EINVALID, "Upload a PNG, JPEG, GIF, WebP image or a PDF.")
	}
	if len(data) == 0 || len(data) > MaxAssetBytes {
		return Errorf(EINVALID, "A file is at most %d MiB.", MaxAssetBytes>>20)
	}
	sum := sha256.Sum256(data)
	return db.Update(ctx, func(tx *Tx) error {
		p, err := ownedForChange(ctx, tx, a, programID, programRetired)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO private_assets (program_id, name, content_type, data, sha256, created_at)
			VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (program_id, name) DO UPDATE SET
			content_type = excluded.content_type, data = excluded.data, sha256 = excluded.sha256, created_at = excluded.created_at`,
			p.ID, name, contentType, data, sum[:], Millis(tx.Now)); err != nil {
			return fmt.Errorf("store asset: %w", err)
		}
		return appendEvent(ctx, tx, p.ID, "", a, AssetUploadedDetails{Bytes: len(data)})
	})
}

// ListAssets lists a program's private assets for its owner.
func (db *DB) ListAssets(ctx context.Context, a Actor, programID string) ([]AssetInfo, error) {
	var out []AssetInfo
	err := db.View(ctx, func(tx *Tx) error {
		p, err := ownedProgram(ctx, tx, a, programID)
		if err != nil {
			return err
		}
		out, err = assetInfos(ctx, tx, p.ID)
		return err
	})
	return out, err
}
