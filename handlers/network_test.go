package handlers

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"admit/store"

	"github.com/google/uuid"
)

// mustStartSibling starts a second real server on a loopback port over
// app's database and identity, with app's options changed by set: another
// server key, a proxy header. The returned app is app with the sibling's
// URL and server, so its clients talk to the sibling.
func mustStartSibling(tb testing.TB, app *testApp, set func(*Options)) *testApp {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("listen: %v", err)
	}
	base := "http://" + ln.Addr().String()
	opts := srvOf(app).opts
	opts.PublicURL, _ = url.Parse(base)
	opts.Logger = slog.New(slog.NewTextHandler(app.Logs, nil))
	set(&opts)
	srv, err := New(opts, app.DB, srvOf(app).id)
	if err != nil {
		tb.Fatalf("new server: %v", err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ln)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(ctx)
	})
	return &testApp{URL: base, DB: app.DB, Clock: app.Clock, Clerk: app.Clerk, Dev: app.Dev,
		Srv: srv, OwnerID: app.OwnerID, Demo: app.Demo, Logs: app.Logs}
}

// counterKeys is every network counter's key and attempts.
func counterKeys(tb testing.TB, app *testApp) map[string]int {
	tb.Helper()
	out := map[string]int{}
	err := app.DB.View(context.Background(), func(tx *store.Tx) error {
		rows, err := tx.Query(`SELECT key, attempts FROM network_counters`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k []byte
			var n int
			if err := rows.Scan(&k, &n); err != nil {
				return err
			}
			out[string(k)] = n
		}
		return rows.Err()
	})
	if err != nil {
		tb.Fatalf("read counters: %v", err)
	}
	return out
}

// signupFrom posts one JSON signup with a fresh key and address, with the
// given extra headers, and returns its status.
func signupFrom(tb testing.TB, c *testClient, headers ...string) int {
	tb.Helper()
	email := "net-" + uuid.NewString()[:8] + "@example.com"
	return c.PostJSON(tb, "POST", signupAPI, signupJSONBody(uuid.NewString(), email, 1, true), headers...).StatusCode
}

// wantStatuses fails the test unless each step's status is the wanted one.
func wantStatuses(tb testing.TB, steps []string, got, want []int) {
	tb.Helper()
	for i := range want {
		if got[i] != want[i] {
			tb.Errorf("%s: status %d, want %d", steps[i], got[i], want[i])
		}
	}
}

// rule (docs/signup.md#order-of-admission): the network's counter is per
// UTC hour. The hour is part of the counter's key, so the counter a
// network filled is not the one it counts on after the hour turns, even
// before any cleanup has deleted the full one (cleanup runs at most once a
// minute; here its last run was 35 s before the new hour's first attempt).
func TestNetworkCounter_ANewUTCHourCountsOnANewCounter(t *testing.T) {
	app := MustStartApp(t, withNetworkLimit(2))
	c := app.NewClient(t)
	app.Clock.Set(time.Date(2026, 11, 29, 10, 59, 30, 0, time.UTC))
	got := []int{signupFrom(t, c), signupFrom(t, c), signupFrom(t, c)}
	app.Clock.Set(time.Date(2026, 11, 29, 11, 0, 5, 0, time.UTC))
	got = append(got, signupFrom(t, c), signupFrom(t, c), signupFrom(t, c))
	wantStatuses(t, []string{"10:59:30 first", "10:59:30 second", "10:59:30 third (over the limit)",
		"11:00:05 first", "11:00:05 second", "11:00:05 third (over the limit)"},
		got, []int{202, 202, 429, 202, 202, 429})

	keys := counterKeys(t, app)
	ten := srvOf(app).counterKey("signup", time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), "127.0.0.1")
	eleven := srvOf(app).counterKey("signup", time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC), "127.0.0.1")
	if bytes.Equal(ten, eleven) {
		t.Fatal("the counter keys of 10:00 and 11:00 are equal: the hour is not part of the key")
	}
	if keys[string(ten)] != 2 || keys[string(eleven)] != 2 || len(keys) != 2 {
		t.Fatalf("counters %d, want two of 2 attempts: one keyed by 10:00, one by 11:00", len(keys))
	}
}

// rule (docs/signup.md#order-of-admission): the counter's key is an HMAC
// under the server's counter key, never an unkeyed digest that anyone
// could compute for every IPv4 address. Two servers with different keys,
// one database: the same network in the same hour counts on two counters.
func TestNetworkCounter_IsKeyedWithTheServerCounterKey(t *testing.T) {
	app := MustStartApp(t, withNetworkLimit(5))
	other := mustStartSibling(t, app, func(o *Options) {
		o.Keys.Counter = testKey(200)
	})
	if s := signupFrom(t, app.NewClient(t)); s != http.StatusAccepted {
		t.Fatalf("signup through the first server: %d", s)
	}
	if s := signupFrom(t, other.NewClient(t)); s != http.StatusAccepted {
		t.Fatalf("signup through the second server: %d", s)
	}
	hour := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	mine := srvOf(app).counterKey("signup", hour, "127.0.0.1")
	theirs := srvOf(other).counterKey("signup", hour, "127.0.0.1")
	keys := counterKeys(t, app)
	if len(keys) != 2 || keys[string(mine)] != 1 || keys[string(theirs)] != 1 {
		t.Fatalf("%d counters, want two of one attempt each: the key depends on the server key", len(keys))
	}
	// Nor is it a plain SHA-256 of what it covers, framed or not.
	framed := sha256.Sum256(frameFields("admit counter v1", "signup", strconv.FormatInt(hour.Unix(), 10), "127.0.0.1"))
	plain := sha256.Sum256([]byte("127.0.0.1"))
	for k := range keys {
		if k == string(framed[:]) || k == string(plain[:]) {
			t.Fatal("a counter key is an unkeyed SHA-256 of the hour and the address")
		}
	}
}

// frameFields is the length-delimited encoding the counter key covers.
func frameFields(fields ...string) []byte {
	var b []byte
	for _, f := range fields {
		b = binary.BigEndian.AppendUint32(b, uint32(len(f)))
		b = append(b, f...)
	}
	return b
}

// rule (docs/signup.md#order-of-admission): an IPv6 client is counted by
// its /64, which one subscriber usually holds whole: other addresses of the
// same /64 share its counter, the next /64 has its own.
func TestNetworkCounter_IPv6IsCountedPer64(t *testing.T) {
	app := mustStartSibling(t, MustStartApp(t, withClerk(), withNetworkLimit(2)), func(o *Options) {
		o.ClientIPHeader = "X-Forwarded-For"
	})
	c := app.NewClient(t)
	steps := []string{"2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:fffe", "2001:db8:1:2:abcd::5", "2001:db8:1:3::1"}
	var got []int
	for _, addr := range steps {
		got = append(got, signupFrom(t, c, "X-Forwarded-For", addr))
	}
	wantStatuses(t, steps, got, []int{202, 202, 429, 202})

	// Straight from RemoteAddr, when a request has no proxy header, the same.
	direct := srvOf(app)
	network := func(remote string) string {
		r := mustRequest(t, "POST", "http://admit.test/")
		r.RemoteAddr = remote
		return direct.clientNetwork(r)
	}
	if a, b := network("[2001:db8:1:2::1]:4000"), network("[2001:db8:1:2:abcd::5]:4001"); a != b {
		t.Errorf("two addresses of one /64 are networks %q and %q", a, b)
	}
	if a, b := network("[2001:db8:1:2::1]:4000"), network("[2001:db8:1:3::1]:4000"); a == b {
		t.Errorf("two /64s are one network %q", a)
	}
}

// rule (docs/signup.md#order-of-admission): behind a proxy the client is
// the last address of ADMIT_CLIENT_IP_HEADER, the one the proxy appended;
// the hops before it are whatever the client sent, and a client that
// changes them must still count on its own counter.
func TestNetworkCounter_BehindAProxyTheLastHopCounts(t *testing.T) {
	app := mustStartSibling(t, MustStartApp(t, withClerk(), withNetworkLimit(1)), func(o *Options) {
		o.ClientIPHeader = "X-Forwarded-For"
	})
	c := app.NewClient(t)
	steps := []string{
		"198.51.100.7, 203.0.113.5",
		"198.51.100.99, 203.0.113.5", // a forged first hop: the same client
		"198.51.100.7,203.0.113.6",   // the same first hop, another client
		"203.0.113.6",
	}
	var got []int
	for _, hops := range steps {
		got = append(got, signupFrom(t, c, "X-Forwarded-For", hops))
	}
	wantStatuses(t, steps, got, []int{202, 429, 202, 429})
}

// mustStartForwardingProxy starts a reverse proxy on a loopback port in
// front of app that adds the address it saw to X-Forwarded-For: as a line
// of its own after the client's lines when ownLine is set (as HAProxy's
// option forwardfor does), else joined to the client's value with a comma
// (as nginx's $proxy_add_x_forwarded_for does). The returned app is app
// reached through the proxy.
func mustStartForwardingProxy(tb testing.TB, app *testApp, ownLine bool) *testApp {
	tb.Helper()
	target, err := url.Parse(app.URL)
	if err != nil {
		tb.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		pr.Out.Host = pr.In.Host
		seen, _, _ := net.SplitHostPort(pr.In.RemoteAddr)
		client := pr.In.Header.Values("X-Forwarded-For")
		if ownLine {
			pr.Out.Header["X-Forwarded-For"] = append(slices.Clone(client), seen)
		} else {
			pr.Out.Header.Set("X-Forwarded-For", strings.Join(append(slices.Clone(client), seen), ", "))
		}
	}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("listen: %v", err)
	}
	hs := &http.Server{Handler: proxy, ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ln)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(ctx)
	})
	return &testApp{URL: "http://" + ln.Addr().String(), DB: app.DB, Clock: app.Clock, Clerk: app.Clerk,
		Dev: app.Dev, Srv: app.Srv, OwnerID: app.OwnerID, Demo: app.Demo, Logs: app.Logs}
}

// clientFrom is a signed-out client of app whose connections come from the
// loopback address local (any 127.x.y.z), so that a proxy sees it as a
// client of its own.
func clientFrom(tb testing.TB, app *testApp, local string) *testClient {
	tb.Helper()
	c := app.NewClient(tb)
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	c.Client.Transport = &http.Transport{DialContext: dialer.DialContext}
	return c
}

// rule (docs/DEPLOY.md#the-reverse-proxy): every line of the client
// address header counts, as one comma-separated list, and the last hop is
// the client. A client that sends X-Forwarded-For lines of its own, with a
// new address each time, through a proxy that adds its own line after them
// gets exactly the limit's signups; through a proxy that joins its address
// to the value with a comma, the same. Another client behind the same
// proxy counts on its own counter.
func TestNetworkCounter_ForgedForwardedForLinesDoNotEscapeTheLimit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ownLine bool
	}{
		{"proxy adds its own line", true},
		{"proxy joins with a comma", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			app := mustStartSibling(t, MustStartApp(t, withClerk(), withNetworkLimit(5)), func(o *Options) {
				o.ClientIPHeader = "X-Forwarded-For"
			})
			proxied := mustStartForwardingProxy(t, app, tc.ownLine)
			forger := clientFrom(t, proxied, "127.0.0.2")
			accepted, refused := 0, 0
			for i := range 15 {
				switch s := signupFrom(t, forger, "X-Forwarded-For", "198.51.100."+strconv.Itoa(i+1)); s {
				case http.StatusAccepted:
					accepted++
				case http.StatusTooManyRequests:
					refused++
				default:
					t.Fatalf("signup %d: status %d", i+1, s)
				}
			}
			if accepted != 5 || refused != 10 {
				t.Fatalf("%d accepted and %d refused of 15 with forged lines, want 5 and 10", accepted, refused)
			}
			if s := signupFrom(t, clientFrom(t, proxied, "127.0.0.3")); s != http.StatusAccepted {
				t.Fatalf("another client behind the proxy: status %d, want 202 on its own counter", s)
			}
			hour := app.Clock.Now().UTC().Truncate(time.Hour)
			keys := counterKeys(t, app)
			if got := keys[string(srvOf(app).counterKey("signup", hour, "127.0.0.2"))]; got != 5 {
				t.Errorf("the forger's counter (the address the proxy saw) holds %d attempts, want 5", got)
			}
		})
	}
}
