// Package datalock keeps one admit server per data directory: an
// exclusive lock on the directory's admit.lock, which names its holder
// (docs/DEPLOY.md, "One server per data directory").
package datalock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// FileName is the file in the data directory that admit serve, admit
// migrate and a restore into the live database lock (docs/DEPLOY.md, "One
// server per data directory"). It holds the holder's PID and command.
const FileName = "admit.lock"

// Lock is an exclusive flock on a data directory's lock file, held
// until Release or the process's end (the kernel drops it then, so a
// crashed holder leaves no stale lock behind).
type Lock struct{ f *os.File }

// BusyError says another admit process holds the data directory.
type BusyError struct {
	Dir string
	// PID and Cmd are what the holder wrote in the lock file; PID is 0 when
	// it could not be read.
	PID int
	Cmd string
}

func (e *BusyError) Error() string {
	holder := "another admit process"
	if e.Cmd != "" {
		holder = "admit " + e.Cmd
	}
	if e.PID > 0 {
		return fmt.Sprintf("data directory %s is in use by %s (PID %d)", e.Dir, holder, e.PID)
	}
	return fmt.Sprintf("data directory %s is in use by %s (its PID is not in %s)", e.Dir, holder, FileName)
}

// Take takes dir's lock for cmd without waiting, creating dir and
// the lock file if needed. When another process holds it, it returns a
// *BusyError naming that process.
func Take(dir, cmd string) (*Lock, error) {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	path := filepath.Join(dir, FileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := flock(f); err != nil {
		f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		busy := &BusyError{Dir: dir}
		busy.PID, busy.Cmd = readHolder(path)
		return nil, busy
	}
	// The lock is ours: say who holds it. The file is never removed, so
	// every process locks the same inode.
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt([]byte(fmt.Sprintf("%d %s\n", os.Getpid(), cmd)), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return &Lock{f: f}, nil
}

// flock takes f's exclusive lock without waiting, retrying a system call
// interrupted by a signal.
func flock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// holderWriteWait bounds how long readHolder waits for a holder that has
// just taken the lock to write its PID.
const holderWriteWait = time.Second

// readHolder reads the PID and command the lock's holder wrote. A holder
// writes them just after taking the lock, so an empty file is read again
// until holderWriteWait has passed.
func readHolder(path string) (pid int, cmd string) {
	deadline := time.Now().Add(holderWriteWait)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		b, err := os.ReadFile(path)
		if err == nil {
			if f := strings.Fields(string(b)); len(f) > 0 {
				if pid, err = strconv.Atoi(f[0]); err == nil && pid > 0 {
					if len(f) > 1 {
						cmd = f[1]
					}
					return pid, cmd
				}
			}
		}
		if time.Now().After(deadline) {
			return 0, ""
		}
		time.Sleep(wait)
	}
}

// Release empties the lock file and drops the lock. Safe on nil.
func (l *Lock) Release() error {
	if l == nil {
		return nil
	}
	terr := l.f.Truncate(0) // a stopped server leaves no PID to mistake for a live one
	return errors.Join(terr, l.f.Close())
}
