package web

import (
	"sync"

	"github.com/google/uuid"

	"viewer/trace/export"
)

// statsCache holds the statistics of the indexed traces in memory, capped
// (capStats), so that the library page and listing do not read every
// trace's stats file on every request.
type statsCache struct {
	lib *Library

	mu sync.Mutex
	m  map[uuid.UUID]*export.Stats
}

func newStatsCache(lib *Library) *statsCache {
	return &statsCache{lib: lib, m: map[uuid.UUID]*export.Stats{}}
}

// get returns the statistics of a trace, if it was indexed. The result is
// shared: do not modify it.
func (c *statsCache) get(id uuid.UUID) (*export.Stats, bool) {
	c.mu.Lock()
	st, ok := c.m[id]
	c.mu.Unlock()
	if ok {
		return st, true
	}
	full, ok := c.lib.Stats(id)
	if !ok {
		return nil, false // not cached: it appears when the build ends
	}
	capped := capStats(full)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.lib.Get(id); !ok {
		return nil, false // deleted meanwhile
	}
	c.m[id] = &capped
	return &capped, true
}

// set records the statistics of a trace just indexed.
func (c *statsCache) set(id uuid.UUID, st export.Stats) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.lib.Get(id); ok {
		c.m[id] = &st
	}
}

// drop forgets a deleted trace.
func (c *statsCache) drop(id uuid.UUID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, id)
}
