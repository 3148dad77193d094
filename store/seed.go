package store

import (
	"context"
	"fmt"
)

// DemoWorkspace and DemoSlug name what SeedDemo creates.
const (
	DemoWorkspace = "Demo workspace"
	DemoSlug      = "demo"
	DemoName      = "admit demo"
	// DemoContact is where the demo workspace takes privacy questions.
	DemoContact = "privacy@example.test"
)

// SeedDemo prepares a development database on first start: a demo workspace
// owned by ownerUserID and an open demo program with a notice and private
// content. It goes through the same audited operations as the CLI and the
// owner console, and does nothing when any workspace already exists.
func (db *DB) SeedDemo(ctx context.Context, ownerUserID string) (seeded bool, err error) {
	var n int
	err = db.View(ctx, func(tx *Tx) error {
		return tx.QueryRowContext(ctx, `SELECT count(*) FROM workspaces`).Scan(&n)
	})
	if err != nil || n > 0 {
		return false, err
	}
	w, err := db.AddOwner(ctx, Actor{Kind: ActorSystem}, DemoWorkspace, ownerUserID)
	if err != nil {
		return false, fmt.Errorf("seed owner: %w", err)
	}
	owner := Actor{Kind: ActorOwner, UserID: ownerUserID}
	display, contact := "admit demo team", DemoContact
	if _, err := db.UpdateWorkspace(ctx, owner, w.ID, WorkspaceSettings{DisplayName: &display, Contact: &contact}); err != nil {
		return false, fmt.Errorf("seed workspace names: %w", err)
	}
	purpose := "Early access to the admit demo: we will invite people from this list, in small groups, to try the demo before it is public."
	p, err := db.CreateProgram(ctx, owner, NewProgram{WorkspaceID: w.ID, Slug: DemoSlug, Name: DemoName, Purpose: purpose,
		QueueCap: 1000, HourlyCap: 200, SeatCap: 50, MaxInvitationDays: 14})
	if err != nil {
		return false, fmt.Errorf("seed program: %w", err)
	}
	if _, err := db.PublishNotice(ctx, owner, p.ID, NewNotice{
		Purpose:       purpose,
		ContactText:   "We will use your email address only to send you one invitation code for this demo, by hand, if you are selected. No newsletters, no marketing.",
		RetentionText: "Your address stays on this list until the demo program is retired, or until you remove it with your private link. See the privacy page for exact periods.",
	}); err != nil {
		return false, fmt.Errorf("seed notice: %w", err)
	}
	_, err = db.PutContent(ctx, owner, p.ID, ContentEdit{ExpectedRevision: 0, Body: "Welcome to the admit demo.\n\nThis text is private: only people whose invitation was redeemed can read it."})
	if err != nil {
		return false, fmt.Errorf("seed content: %w", err)
	}
	p, err = db.ProgramByID(ctx, owner, p.ID)
	if err != nil {
		return false, err
	}
	yes := true
	if _, err := db.UpdateProgram(ctx, owner, p.ID, ProgramSettings{ExpectedRevision: p.Revision, SignupOpen: &yes, AccessEnabled: &yes}); err != nil {
		return false, fmt.Errorf("open demo program: %w", err)
	}
	return true, nil
}

// ProgramByID returns a program the actor currently owns.
func (db *DB) ProgramByID(ctx context.Context, a Actor, programID string) (*Program, error) {
	var p *Program
	err := db.View(ctx, func(tx *Tx) error {
		var err error
		p, err = ownedProgram(ctx, tx, a, programID)
		return err
	})
	return p, err
}
