package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// fsyncProbe is how the disk under the data directory answered fsync: a
// write lock is held through its commit's fsync, so a disk that stalls now
// and then shows in the longest holds whatever admit does.
type fsyncProbe struct {
	N             int
	P50, P99, Max time.Duration
	Over50ms      int
	Length        time.Duration
}

// probeFsync writes 160 KiB (about a batch of signups' WAL frames) to a
// file in dir and fsyncs it, again and again for d, and reports the
// fsyncs' latencies. The file is removed afterwards.
func probeFsync(dir string, d time.Duration) (fsyncProbe, error) {
	path := filepath.Join(dir, "fsync-probe")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o600)
	if err != nil {
		return fsyncProbe{}, err
	}
	defer os.Remove(path)
	defer f.Close()
	const chunk, span = 160 << 10, 64 << 20
	buf := make([]byte, chunk)
	var lat []time.Duration
	var off int64
	for end := time.Now().Add(d); time.Now().Before(end); {
		if _, err := f.WriteAt(buf, off); err != nil {
			return fsyncProbe{}, fmt.Errorf("fsync probe: %w", err)
		}
		if off += chunk; off >= span {
			off = 0
		}
		t := time.Now()
		if err := f.Sync(); err != nil {
			return fsyncProbe{}, fmt.Errorf("fsync probe: %w", err)
		}
		lat = append(lat, time.Since(t))
	}
	return summarizeFsyncs(lat, d), nil
}

// summarizeFsyncs is the probe's figures for latencies measured over d.
func summarizeFsyncs(lat []time.Duration, d time.Duration) fsyncProbe {
	p := fsyncProbe{N: len(lat), Length: d}
	if len(lat) == 0 {
		return p
	}
	slices.Sort(lat)
	p.P50, p.P99, p.Max = lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1]
	for _, l := range lat {
		if l > 50*time.Millisecond {
			p.Over50ms++
		}
	}
	return p
}
