package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"admit/internal/config"
	"admit/store"
)

func ownerCmd(ctx context.Context, args []string, env config.Environment, stdout io.Writer) (err error) {
	if len(args) == 0 {
		return usagef("owner: want add, remove or list")
	}
	sub := args[0]
	fs := flag.NewFlagSet("owner "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	workspace := fs.String("workspace", "", "workspace name")
	user := fs.String("user", "", "identity provider user ID")
	email := fs.String("email", "", "the address the owner signs in with (add only)")
	name := fs.String("name", "", "the owner's name, as the team shows it (with --email)")
	if err := fs.Parse(args[1:]); err != nil {
		return usagef("owner %s: %w", sub, err)
	}
	if *workspace == "" {
		return usagef("owner %s: --workspace is required", sub)
	}
	switch {
	case sub == "add" && (*user == "") == (*email == ""):
		return usagef("owner add: give --user or --email, not both")
	case sub == "remove" && *user == "":
		return usagef("owner remove: --user is required")
	case sub != "add" && (*email != "" || *name != ""):
		return usagef("owner %s: --email and --name are for add", sub)
	case *name != "" && *email == "":
		return usagef("owner add: --name goes with --email")
	}
	db, release, err := openBesideServer(ctx, env, "owner")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, release()) }()
	defer closeDB(db, &err)
	cli := store.Actor{Kind: store.ActorCLI}
	switch sub {
	case "add":
		if *email != "" {
			_, inv, err := db.AddOwnerByEmail(ctx, cli, *workspace, *email, *name)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "the first sign-in with that address, verified by the identity provider, before %s becomes an owner of %q\n",
				inv.ExpiresAt.Format(time.RFC3339), *workspace)
			return nil
		}
		if _, err := db.AddOwner(ctx, cli, *workspace, *user); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s is an owner of %q\n", *user, *workspace)
	case "remove":
		if err := db.RemoveOwner(ctx, cli, *workspace, *user); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s is no longer an owner of %q\n", *user, *workspace)
	case "list":
		owners, err := db.ListOwners(ctx, *workspace)
		if err != nil {
			return err
		}
		for _, o := range owners {
			status := "active"
			if !o.Active {
				status = "removed"
			}
			fmt.Fprintf(stdout, "%s\t%s\t%s\n", o.UserID, status, o.UpdatedAt.Format(time.RFC3339))
		}
	default:
		return usagef("owner: unknown subcommand %q", sub)
	}
	return nil
}
