package backup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestStart_AnS3ReplicaOfAnotherDatabaseIsRefused(t *testing.T) {
	t.Setenv("AWS_CA_BUNDLE", "") // see TestReplicate_S3CompatibleReplicaRoundTrips
	endpoint := MustFakeS3(t, "admit-backups")
	s3Env := func(tb testing.TB) *testEnv {
		dbPath := filepath.Join(tb.TempDir(), "admit.db")
		cfg := mustLoadConfig(tb, `
dbs:
  - path: `+dbPath+`
    replica:
      type: s3
      bucket: admit-backups
      path: prod/admit
      endpoint: $S3_ENDPOINT
      region: us-east-1
`, map[string]string{"S3_ENDPOINT": endpoint})
		cfg.Credentials = Credentials{AccessKeyID: "test-key", SecretAccessKey: "test-secret"}
		return &testEnv{DBPath: dbPath, Config: cfg}
	}
	ctx := context.Background()
	prod := s3Env(t)
	db := prod.MustOpenStore(t)
	r := prod.MustStart(t)
	prod.mustSignup(t, db, 2)
	mustSync(t, r)
	prodID, _ := DatabaseIdentity(ctx, prod.DBPath)

	staging := s3Env(t)
	staging.MustOpenStore(t)
	_, err := Start(ctx, staging.Config, staging.DBPath, quietLogger())
	var owner *OwnerError
	if !errors.As(err, &owner) {
		t.Fatalf("Start of a second database on the S3 replica: %v, want an *OwnerError", err)
	}
	if owner.Owner.DatabaseID != prodID || !strings.Contains(err.Error(), "s3://admit-backups/prod/admit") {
		t.Errorf("the refusal names %s: %v", owner.Owner.DatabaseID, err)
	}

	// Production itself starts again on its replica.
	mustStop(t, db, r)
	db = prod.MustOpenStore(t)
	r = prod.MustStart(t)
	mustStop(t, db, r)
}

func TestDatabaseIdentity_IsCreatedOnceAndKept(t *testing.T) {
	ctx := context.Background()
	e := MustTestEnv(t)
	e.MustOpenStore(t)
	if id, err := DatabaseIdentity(ctx, e.DBPath); err != nil || id != "" {
		t.Fatalf("identity before the first replication: %q, %v", id, err)
	}
	first, err := databaseIdentity(ctx, e.DBPath)
	if err != nil || len(first) != 32 {
		t.Fatalf("databaseIdentity: %q, %v", first, err)
	}
	again, err := databaseIdentity(ctx, e.DBPath)
	if err != nil || again != first {
		t.Fatalf("databaseIdentity again: %q, %v; want %q", again, err, first)
	}
	if id, _ := DatabaseIdentity(ctx, e.DBPath); id != first {
		t.Errorf("DatabaseIdentity=%q, want %q", id, first)
	}
	other := MustTestEnv(t)
	other.MustOpenStore(t)
	if id, _ := databaseIdentity(ctx, other.DBPath); id == first {
		t.Error("two databases have one identity")
	}
}

// A replica claimed by another database while this one runs (its owner
// file replaced) turns Ready into an error; the server does not take it
// back.
func TestReplicaCheck_AReplicaClaimedByAnotherDatabaseIsNotReady(t *testing.T) {
	ctx := context.Background()
	e := MustTestEnv(t)
	e.Config.ReplicaCheckInterval = time.Hour // checks run when the test calls
	db := e.MustOpenStore(t)
	r, log := e.MustStartLogged(t)
	e.mustSignup(t, db, 1)
	mustSync(t, r)
	r.CheckReplica(ctx)
	if err := r.Ready(ctx); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	other := `{"database_id": "00000000000000000000000000000001", "path": "/srv/other/admit.db", "host": "other"}`
	if err := os.WriteFile(filepath.Join(e.ReplicaDir, ownerFileName), []byte(other), 0o600); err != nil {
		t.Fatal(err)
	}
	r.CheckReplica(ctx)
	if err := r.Ready(ctx); err == nil || !strings.HasPrefix(err.Error(), "backup replica claimed by another database since ") {
		t.Errorf("Ready with the replica claimed by another database: %v", err)
	}
	if !strings.Contains(log.String(), "the backup replica now belongs to another database") {
		t.Errorf("the log does not say so:\n%s", log)
	}
	b, _ := os.ReadFile(filepath.Join(e.ReplicaDir, ownerFileName))
	if string(b) != other {
		t.Errorf("the server rewrote the other database's owner file: %s", b)
	}
}
