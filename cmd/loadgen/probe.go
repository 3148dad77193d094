package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"time"

	"admit/internal/proc"
)

// The shed probe measures what a refusal costs a client that is not itself
// starved of CPU. The overload level's clients are a thousand goroutines
// of this process on the same two cores as admit, so the time they measure
// for a 503 is mostly their own wait for a core. The probe is this program
// started again as a process of its own (one thread), sending one signup
// at a time, every probeEvery, to the level's program for the level's
// length, and reporting the latencies of the 503s it got.

// shedProbeEnv, when set in this program's environment, makes it run as
// the probe: the variable holds the probe's shedProbeConfig as JSON.
const shedProbeEnv = "LOADGEN_SHED_PROBE"

// probeEvery spaces the probe's signups.
const probeEvery = 5 * time.Millisecond

// shedProbeConfig is what the probe is told.
type shedProbeConfig struct {
	BaseURL       string        `json:"baseURL"`
	Slug          string        `json:"slug"`
	NoticeVersion int           `json:"noticeVersion"`
	RunID         string        `json:"runID"`
	Duration      time.Duration `json:"duration"`
}

// shedProbeResult is what the probe reports: its 503s' latencies, and how
// many signups were answered otherwise (accepted) or failed.
type shedProbeResult struct {
	Shed     []time.Duration `json:"shed"`
	Answered int             `json:"answered"`
	Failed   int             `json:"failed"`
}

// runShedProbeIfAsked runs the probe and exits when this process was
// started as one.
func runShedProbeIfAsked() {
	v := os.Getenv(shedProbeEnv)
	if v == "" {
		return
	}
	if err := shedProbe(context.Background(), v, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "shed probe:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// shedProbe sends the probe's signups and writes its result as JSON to out.
func shedProbe(ctx context.Context, config string, out io.Writer) error {
	var cfg shedProbeConfig
	if err := json.Unmarshal([]byte(config), &cfg); err != nil {
		return err
	}
	if err := proc.CheckLoopback(cfg.BaseURL); err != nil {
		return err
	}
	p := &program{Slug: cfg.Slug, CurrentNoticeVersion: cfg.NoticeVersion}
	c := &http.Client{Timeout: 10 * time.Second}
	var res shedProbeResult
	for i, end := 0, time.Now().Add(cfg.Duration); time.Now().Before(end); i++ {
		body := signupBody(p, fmt.Sprintf("probe-%s-%d@example.test", cfg.RunID, i))
		t0 := time.Now()
		resp, err := c.Post(cfg.BaseURL+"/api/public/programs/"+cfg.Slug+"/signups", "application/json", bytes.NewReader(body))
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		lat := time.Since(t0)
		switch {
		case err != nil:
			res.Failed++
		case resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "":
			res.Shed = append(res.Shed, lat)
		case resp.StatusCode == http.StatusAccepted:
			res.Answered++
		default:
			res.Failed++
		}
		time.Sleep(probeEvery)
	}
	return json.NewEncoder(out).Encode(res)
}

// startShedProbe starts the probe as a process of its own against p for
// dur; wait returns its result.
func (r *runner) startShedProbe(ctx context.Context, p *program, dur time.Duration) (wait func() (*shedProbeResult, error), err error) {
	cfg, err := json.Marshal(shedProbeConfig{BaseURL: r.srv.BaseURL, Slug: p.Slug, NoticeVersion: p.CurrentNoticeVersion,
		RunID: r.runID, Duration: dur})
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, self)
	cmd.Env = append(os.Environ(), shedProbeEnv+"="+string(cfg), "GOMAXPROCS=1")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the shed probe: %w", err)
	}
	return func() (*shedProbeResult, error) {
		if err := cmd.Wait(); err != nil {
			return nil, fmt.Errorf("shed probe: %w: %s", err, bytes.TrimSpace(stderr.Bytes()))
		}
		var res shedProbeResult
		if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
			return nil, fmt.Errorf("shed probe's report: %w", err)
		}
		slices.Sort(res.Shed)
		return &res, nil
	}, nil
}
