package valkeystore

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/valkey-io/valkey-go"

	"github.com/reapergw/reaper/reaper"
)

// KEYS: the app's history list. ARGV: first, last index (LRANGE's). Returns
// {length, {entries}}, read at one instant.
var historyScript = valkey.NewLuaScript(`
return {redis.call('LLEN', KEYS[1]), redis.call('LRANGE', KEYS[1], ARGV[1], ARGV[2])}
`)

// KEYS: the app's history list. ARGV: the entry's JSON, the cap.
var addEventScript = valkey.NewLuaScript(`
redis.call('LPUSH', KEYS[1], ARGV[1])
redis.call('LTRIM', KEYS[1], 0, tonumber(ARGV[2]) - 1)
return 1
`)

// AddEvent implements reaper.HistoryStore: the push and the trim are one script.
func (s *Store) AddEvent(ctx context.Context, t reaper.Transition) error {
	raw, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("valkeystore: AddEvent %s: %w", t.AppID, err)
	}
	return s.call(ctx, "AddEvent", func(ctx context.Context) error {
		return addEventScript.Exec(ctx, s.client, []string{s.k.historyPrefix + t.AppID},
			[]string{string(raw), strconv.Itoa(reaper.HistoryCap)}).Error()
	})
}

// History implements reaper.HistoryStore: one script, newest first. A negative
// offset counts as 0; a limit of 0 or less returns everything from offset. An
// entry that cannot be decoded makes the call fail with ErrCorrupt.
func (s *Store) History(ctx context.Context, appID string, offset, limit int) ([]reaper.Transition, int, error) {
	offset = max(offset, 0)
	last := -1 // LRANGE's "to the end"
	if limit > 0 && limit <= math.MaxInt-offset {
		last = offset + limit - 1
	}
	var total int64
	var raws []string
	err := s.call(ctx, "History", func(ctx context.Context) error {
		reply, err := historyScript.Exec(ctx, s.client, []string{s.k.historyPrefix + appID},
			[]string{strconv.Itoa(offset), strconv.Itoa(last)}).ToArray()
		if err != nil {
			return err
		}
		if len(reply) != 2 {
			return fmt.Errorf("unexpected script reply of %d elements", len(reply))
		}
		if total, err = reply[0].AsInt64(); err != nil {
			return err
		}
		raws, err = reply[1].AsStrSlice()
		return err
	})
	if err != nil {
		return nil, 0, err
	}
	page := make([]reaper.Transition, len(raws))
	for i, raw := range raws {
		if err := json.Unmarshal([]byte(raw), &page[i]); err != nil {
			return nil, 0, fmt.Errorf("%w: history of %s: %v", ErrCorrupt, appID, err)
		}
	}
	return page, int(total), nil
}
