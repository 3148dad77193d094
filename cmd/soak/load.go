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
	// removing holds every acknowledged signup whose removal was sent,
	// answered or not; removed those the server answered 200.
	removing, removed map[string]bool
}

func newLedger() *ledger {
	return &ledger{keys: map[string]string{}, acked: map[string]bool{}, removing: map[string]bool{}, removed: map[string]bool{}}
}

// removalSent records that email's removal is about to be sent.
func (l *ledger) removalSent(email string) {
	l.mu.Lock()
	l.removing[email] = true
	l.mu.Unlock()
}

// removalDone records that email's removal was answered 200.
func (l *ledger) removalDone(email string) {
	l.mu.Lock()
	l.removed[email] = true
	l.mu.Unlock()
}

// mayBeGone reports whether email's entry may have been erased: its
// removal was sent.
func (l *ledger) mayBeGone(email string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.removing[email]
}

// removedSnapshot returns a copy of the emails whose removal was answered 200.
func (l *ledger) removedSnapshot() map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := make(map[string]bool, len(l.removed))
	for e := range l.removed {
		m[e] = true
	}
	return m
}

// mustHold returns the acknowledged emails that no removal was sent for:
// those the replica must hold.
func (l *ledger) mustHold() map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := make(map[string]bool, len(l.acked))
	for e := range l.acked {
		if !l.removing[e] {
			m[e] = true
		}
	}
	return m
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

// removals returns how many removals were sent and answered 200.
func (l *ledger) removals() (sent, done int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.removing), len(l.removed)
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
// server on the same address. Every removeEvery-th acknowledged signup of a
// client (none when 0) is then removed at once with its private link, so
// erasures commit, and are flushed from the WAL, while signups go on and
// while the server is killed. It returns how many signups and removals were
// answered anything but 202 and 200.
func signupLoad(ctx context.Context, c *http.Client, base string, p *soakProgram, clients int, rate float64, cycle, removeEvery int, l *ledger) (rejected int) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	tokens := pace(ctx, rate)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			acked := 0
			for ctx.Err() == nil {
				if tokens != nil {
					select {
					case <-ctx.Done():
						return
					case <-tokens:
					}
				}
				email, key := l.next(cycle)
				code, token, err := postSignup(ctx, c, base, p, key, email)
				switch {
				case err != nil:
					// No answer: the server was killed or is restarting,
					// so the outcome is unknown. Try again shortly.
					l.lost()
					select {
					case <-ctx.Done():
					case <-time.After(10 * time.Millisecond):
					}
					continue
				case code != http.StatusAccepted:
					l.answered(email, false)
					mu.Lock()
					rejected++
					mu.Unlock()
					continue
				}
				l.answered(email, true)
				if acked++; removeEvery == 0 || acked%removeEvery != 0 {
					continue
				}
				l.removalSent(email)
				code, err = postRemoval(ctx, c, base, token)
				switch {
				case err != nil:
					// Killed meanwhile: the entry may or may not be erased.
				case code == http.StatusOK:
					l.removalDone(email)
				default:
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

// postSignup sends one JSON signup and returns the status code and, when
// it was accepted, the removal token.
func postSignup(ctx context.Context, c *http.Client, base string, p *soakProgram, key, email string) (code int, token string, err error) {
	body, _ := json.Marshal(map[string]any{"requestKey": key, "email": email, "noticeVersion": p.CurrentNoticeVersion, "permission": true})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/public/programs/"+p.Slug+"/signups", bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var answer struct {
		RemovalToken string `json:"removalToken"`
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", err
	}
	if resp.StatusCode == http.StatusAccepted {
		if err := json.Unmarshal(b, &answer); err != nil || answer.RemovalToken == "" {
			return 0, "", fmt.Errorf("accepted signup without a removal token: %v", err)
		}
	}
	return resp.StatusCode, answer.RemovalToken, nil
}

// postRemoval removes an entry with its private link's token and returns
// the status code.
func postRemoval(ctx context.Context, c *http.Client, base, token string) (int, error) {
	body, _ := json.Marshal(map[string]string{"token": token})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/public/removals", bytes.NewReader(body))
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
