package handlers

import (
	"context"
	"testing"

	"admit/store"
)

func TestQuote_KeepsEachNoticeVersionAndNeverMixesThem(t *testing.T) {
	app := MustStartApp(t)
	ctx := context.Background()
	owner := store.Actor{Kind: store.ActorOwner, UserID: app.OwnerID}
	v1, err := srvOf(app).quote(ctx, app.Demo.Slug, 1)
	if err != nil {
		t.Fatalf("quote v1: %v", err)
	}
	if v1.Slug != app.Demo.Slug || v1.Purpose != app.Demo.Purpose || v1.RetentionText == "" {
		t.Fatalf("quote v1=%+v, want the demo program's slug, purpose and retention text", v1)
	}
	if _, ok := srvOf(app).quotes.m.Load(app.Demo.Slug + "\x00" + "1"); !ok {
		t.Fatal("version 1 was not kept: every 202 would read the database again")
	}

	n2, err := app.DB.PublishNotice(ctx, owner, app.Demo.ID, store.NewNotice{Purpose: app.Demo.Purpose,
		ContactText: "A second notice.", RetentionText: "A different retention text for version two."})
	if err != nil {
		t.Fatalf("publish v2: %v", err)
	}
	v2, err := srvOf(app).quote(ctx, app.Demo.Slug, n2.Version)
	if err != nil {
		t.Fatalf("quote v2: %v", err)
	}
	if v2.RetentionText != "A different retention text for version two." {
		t.Fatalf("quote v2 retention=%q, want version two's", v2.RetentionText)
	}
	if again, _ := srvOf(app).quote(ctx, app.Demo.Slug, 1); again != v1 {
		t.Fatalf("quote v1 after v2=%+v, want %+v: a replay quotes the notice it agreed to", again, v1)
	}

	if _, err := srvOf(app).quote(ctx, app.Demo.Slug, 99); store.ErrorCode(err) != store.ENOTFOUND {
		t.Fatalf("quote of an unpublished version: err=%v, want not found", err)
	}
	if _, ok := srvOf(app).quotes.m.Load(app.Demo.Slug + "\x00" + "99"); ok {
		t.Fatal("a missing version was cached")
	}
}
