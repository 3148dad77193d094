package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
)

// ledger records every signup the soak sent: the request key of each
// attempted email and which ones the server answered 202. Safe for
// concurrent use.
type ledger struct {
	mu         sync.Mutex
	keys       map[string]string // email → request key, for every attempt
	acked      map[string]bool
	seq        int
	sent, ok   int
	unanswered int
}

func newLedger() *ledger {
	return &ledger{keys: map[string]string{}, acked: map[string]bool{}}
}

// next records a new attempt and returns its email and request key.
func (l *ledger) next(cycle int) (email, key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	email = fmt.Sprintf("soak-%d-%d@example.test", cycle, l.seq)
	key = uuid.NewString()
	l.keys[email] = key
	l.sent++
	return email, key
}

// answered records a signup's answer; ok means 202.
func (l *ledger) answered(email string, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ok {
		l.acked[email] = true
		l.ok++
	}
}

// lost records a signup that got no answer: its outcome is unknown.
func (l *ledger) lost() {
	l.mu.Lock()
	l.unanswered++
	l.mu.Unlock()
}

// attempted reports whether email was sent and returns its request key.
func (l *ledger) attempted(email string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k, ok := l.keys[email]
	return k, ok
}

// ackedSnapshot returns a copy of the acknowledged emails.
func (l *ledger) ackedSnapshot() map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := make(map[string]bool, len(l.acked))
	for e := range l.acked {
		m[e] = true
	}
	return m
}

// counts returns how many signups were sent, answered 202 and unanswered.
func (l *ledger) counts() (sent, ok, unanswered int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sent, l.ok, l.unanswered
}

// newHTTPClient returns a client keeping a connection per load client.
func newHTTPClient(conns int) *http.Client {
	return &http.Client{
		Transport: &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, DisableCompression: true},
		Timeout:   30 * time.Second,
	}
}

// signupLoad sends signups to the program from clients goroutines until
// ctx is done, recording each in l, across a kill and restart of the
// server on the same address. It returns how many signups were answered
// anything but 202.
func signupLoad(ctx context.Context, c *http.Client, base string, p *soakProgram, clients int, rate float64, cycle int, l *ledger) (rejected int) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	tokens := pace(ctx, rate)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if tokens != nil {
					select {
					case <-ctx.Done():
						return
					case <-tokens:
					}
				}
				email, key := l.next(cycle)
				code, err := postSignup(ctx, c, base, p, key, email)
				switch {
				case err != nil:
					// No answer: the server was killed or is restarting,
					// so the outcome is unknown. Try again shortly.
					l.lost()
					select {
					case <-ctx.Done():
					case <-time.After(10 * time.Millisecond):
					}
				case code == http.StatusAccepted:
					l.answered(email, true)
				default:
					l.answered(email, false)
					mu.Lock()
					rejected++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return rejected
}

// pace returns a channel that yields rate tokens a second until ctx is
// done, or nil (no limit) when rate is zero.
func pace(ctx context.Context, rate float64) <-chan struct{} {
	if rate <= 0 {
		return nil
	}
	tokens := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Duration(float64(time.Second) / rate))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				select {
				case tokens <- struct{}{}:
				case <-ctx.Done():
					return
				default: // every client is busy: the token lapses
				}
			}
		}
	}()
	return tokens
}

// postSignup sends one JSON signup and returns the status code.
func postSignup(ctx context.Context, c *http.Client, base string, p *soakProgram, key, email string) (int, error) {
	body, _ := json.Marshal(map[string]any{"requestKey": key, "email": email, "noticeVersion": p.CurrentNoticeVersion, "permission": true})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/public/programs/"+p.Slug+"/signups", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, err
	}
	return resp.StatusCode, nil
}
