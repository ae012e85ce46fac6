package docker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	dc "github.com/ory/dockertest/v3/docker"
)

// Memory is the memory each running node's container uses now, in bytes,
// by validator name, counted as `docker stats` counts it: the cgroup's
// usage less its inactive file cache (pages the kernel may drop).
func (r *Run) Memory(ctx context.Context) (map[string]uint64, error) {
	r.mu.Lock()
	started := append([]*node(nil), r.nodes...)
	r.mu.Unlock()
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		out  = map[string]uint64{}
		errs []error
	)
	for _, n := range started {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, err := containerMemory(ctx, r.client, n.id)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("node %s: %w", n.name, err))
				return
			}
			out[n.name] = m
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

func containerMemory(ctx context.Context, c *dc.Client, id string) (uint64, error) {
	ch := make(chan *dc.Stats, 1)
	errc := make(chan error, 1)
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	go func() { errc <- c.Stats(dc.StatsOptions{ID: id, Stats: ch, Stream: false, Context: ctx}) }()
	var st *dc.Stats
	for s := range ch {
		if st == nil {
			st = s
		}
	}
	if err := <-errc; err != nil {
		return 0, err
	}
	if st == nil || st.MemoryStats.Usage == 0 {
		return 0, errors.New("no memory stats (container not running?)")
	}
	m := st.MemoryStats
	// cgroup v1 names it total_inactive_file, v2 inactive_file.
	inactive := m.Stats.TotalInactiveFile
	if inactive == 0 {
		inactive = m.Stats.InactiveFile
	}
	if inactive < m.Usage {
		return m.Usage - inactive, nil
	}
	return m.Usage, nil
}
