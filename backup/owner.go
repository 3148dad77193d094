package backup

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"
)

// A replica belongs to one database (docs/DEPLOY.md, "One replica, one
// database"). Each database carries a random identity in a table of its
// own, so it travels with the data: a restore of the replica (a new
// machine, a standby taking over) holds the same identity and is
// recognised as the replica's owner. The replica carries, beside
// Litestream's files, an owner file naming the identity of the database
// that first replicated into it. Start refuses a replica whose owner file
// names another database.

// ownerFileName is the owner file's name at the replica's root, beside
// Litestream's ltx/ directory: Litestream's replication and retention
// only list and delete files under ltx/.
const ownerFileName = "admit-owner.json"

// identityTable holds the database's replica identity: one row.
const identityTable = "admit_database_identity"

// ReplicaOwner is what a replica's owner file records.
type ReplicaOwner struct {
	// DatabaseID is the owning database's identity (32 hex digits).
	DatabaseID string `json:"database_id"`
	// Path and Host say where that database was when it claimed the
	// replica, for the message that refuses another database.
	Path string `json:"path"`
	Host string `json:"host"`
	// ClaimedAt is when it claimed the replica.
	ClaimedAt time.Time `json:"claimed_at"`
}

// String names the owner for messages: its identity, path and host.
func (o *ReplicaOwner) String() string {
	s := "database " + o.DatabaseID + " (" + o.Path
	if o.Host != "" {
		s += " on host " + o.Host
	}
	return s + ")"
}

// OwnerError refuses a replica that belongs to another database.
type OwnerError struct {
	// Replica names the replica, without credentials.
	Replica string
	// Owner is the database the replica belongs to; This is the database
	// that was refused.
	Owner, This ReplicaOwner
}

func (e *OwnerError) Error() string {
	return fmt.Sprintf("replica %s belongs to another database: it holds the backup of %s, claimed %s, "+
		"and this is %s. Two databases replicating to one replica overwrite each other's backup, so this one "+
		"does not replicate there. Give this database its own replica path in litestream.yml; to move the "+
		"replica to this database on purpose, see docs/DEPLOY.md, \"One replica, one database\"",
		e.Replica, e.Owner.String(), e.Owner.ClaimedAt.UTC().Format(time.RFC3339), e.This.String())
}

// errOwnerExists is ownerStore.create's answer when an owner file is there.
var errOwnerExists = errors.New("the replica already has an owner file")

// ownerStore reads and writes a replica's owner file.
type ownerStore interface {
	// read returns the owner file, or nil when the replica has none.
	read(ctx context.Context) (*ReplicaOwner, error)
	// create writes the owner file unless one exists (errOwnerExists).
	create(ctx context.Context, o *ReplicaOwner) error
}

// newOwnerStore returns the owner file store of rc.
func newOwnerStore(ctx context.Context, rc *ReplicaConfig, cred Credentials) (ownerStore, error) {
	switch rc.kind() {
	case "file":
		dir, err := expandPath(rc.Path)
		if err != nil {
			return nil, err
		}
		return fileOwner{dir: dir}, nil
	case "s3":
		return newS3Owner(ctx, rc, cred)
	}
	return nil, fmt.Errorf("replica type %q is not supported", rc.Type)
}

// decodeOwner parses an owner file.
func decodeOwner(b []byte) (*ReplicaOwner, error) {
	var o ReplicaOwner
	if err := json.Unmarshal(b, &o); err != nil || o.DatabaseID == "" {
		return nil, fmt.Errorf("the replica's %s is not an owner file admit wrote: %q", ownerFileName, truncate(string(b), 80))
	}
	return &o, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// fileOwner is the owner file of a file replica.
type fileOwner struct{ dir string }

func (f fileOwner) path() string { return f.dir + string(os.PathSeparator) + ownerFileName }

func (f fileOwner) read(context.Context) (*ReplicaOwner, error) {
	b, err := os.ReadFile(f.path())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the replica's owner file: %w", err)
	}
	return decodeOwner(b)
}

// create writes a temporary file and links it into place: the link fails
// when an owner file exists, so of two databases claiming at once, one wins.
func (f fileOwner) create(_ context.Context, o *ReplicaOwner) error {
	b, err := json.MarshalIndent(o, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		return fmt.Errorf("create the replica directory: %w", err)
	}
	tmp, err := os.CreateTemp(f.dir, "."+ownerFileName+".*")
	if err != nil {
		return fmt.Errorf("write the replica's owner file: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(append(b, '\n'))
	if err = errors.Join(err, tmp.Sync(), tmp.Close()); err != nil {
		return fmt.Errorf("write the replica's owner file: %w", err)
	}
	if err := os.Link(tmp.Name(), f.path()); errors.Is(err, os.ErrExist) {
		return errOwnerExists
	} else if err != nil {
		return fmt.Errorf("write the replica's owner file: %w", err)
	}
	return syncDir(f.dir)
}

// databaseIdentity returns the identity of the database at path, creating
// it in the database on first use. The write goes through a connection of
// its own that never checkpoints: while a replica is configured, Litestream
// alone checkpoints the WAL (see serveStoreOptions in internal/cli).
func databaseIdentity(ctx context.Context, path string) (string, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "wal_autocheckpoint(0)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return "", fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return "", fmt.Errorf("read the database identity: %w", err)
	}
	defer tx.Rollback()
	var id string
	err = tx.QueryRowContext(ctx, `SELECT id FROM `+identityTable+` WHERE one = 1`).Scan(&id)
	if err == nil {
		return id, nil
	}
	// A missing table is created in the same transaction.
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+identityTable+` (
		one INTEGER PRIMARY KEY CHECK (one = 1),
		id TEXT NOT NULL,
		created_at TEXT NOT NULL
	) STRICT`); err != nil {
		return "", fmt.Errorf("create the database identity: %w", err)
	}
	err = tx.QueryRowContext(ctx, `SELECT id FROM `+identityTable+` WHERE one = 1`).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		id, err = newDatabaseID()
		if err == nil {
			_, err = tx.ExecContext(ctx, `INSERT INTO `+identityTable+` (one, id, created_at) VALUES (1, ?, ?)`,
				id, time.Now().UTC().Format(time.RFC3339))
		}
	}
	if err != nil {
		return "", fmt.Errorf("create the database identity: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return "", fmt.Errorf("create the database identity: %w", err)
	}
	return id, nil
}

// DatabaseIdentity reads the identity of the database at path without
// writing: "" when it has none yet (it never replicated).
func DatabaseIdentity(ctx context.Context, path string) (string, error) {
	db, err := openReadOnly(path)
	if err != nil {
		return "", err
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?`, identityTable).Scan(&n); err != nil || n == 0 {
		return "", err
	}
	var id string
	err = db.QueryRowContext(ctx, `SELECT id FROM `+identityTable+` WHERE one = 1`).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return id, err
}

// newDatabaseID is 16 random bytes in hex.
func newDatabaseID() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// claimReplica makes sure the replica belongs to the database whose
// identity is this.DatabaseID: it writes the owner file when the replica has
// none, and returns an *OwnerError when the file names another database.
//
// rule: a replica belongs to one database (docs/DEPLOY.md, "One replica,
// one database").
func claimReplica(ctx context.Context, owners ownerStore, replica string, this ReplicaOwner) (claimed bool, err error) {
	o, err := owners.read(ctx)
	if err != nil {
		return false, err
	}
	if o == nil {
		this.ClaimedAt = time.Now().UTC()
		err := owners.create(ctx, &this)
		if err != nil && !errors.Is(err, errOwnerExists) {
			return false, err
		}
		claimed = err == nil
		// Read back: of two databases claiming at once, one wins.
		if o, err = owners.read(ctx); err != nil {
			return false, err
		}
		if o == nil {
			return false, fmt.Errorf("replica %s: the owner file just written cannot be read back", replica)
		}
	}
	if o.DatabaseID != this.DatabaseID {
		return false, &OwnerError{Replica: replica, Owner: *o, This: this}
	}
	return claimed, nil
}

// thisOwner describes the database at dbPath with identity id.
func thisOwner(id, dbPath string) ReplicaOwner {
	host, _ := os.Hostname()
	return ReplicaOwner{DatabaseID: id, Path: dbPath, Host: host}
}
