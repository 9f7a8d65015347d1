package valkeystore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/valkey-io/valkey-go"

	"github.com/reapergw/reaper/reaper"
)

// A webhook's queue is a sorted set of event id → position (from one counter
// shared by every queue, so positions only grow) and a hash of event id → event
// JSON. Each method is one script: the set and the hash never disagree.

// KEYS: the queue's set, its hash, the position counter. ARGV: id, event JSON,
// limit. Returns how many of the oldest events were dropped to keep the limit.
var enqueueScript = valkey.NewLuaScript(`
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then return 0 end
local pos = redis.call('INCR', KEYS[3])
redis.call('ZADD', KEYS[1], pos, ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[3])
if over <= 0 then return 0 end
local old = redis.call('ZPOPMIN', KEYS[1], over)
for i = 1, #old, 2 do redis.call('HDEL', KEYS[2], old[i]) end
return over
`)

// KEYS: the queue's set, its hash. ARGV: limit. Returns the oldest events' JSON,
// oldest first.
var pendingScript = valkey.NewLuaScript(`
local ids = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
local out = {}
for _, id in ipairs(ids) do
  local raw = redis.call('HGET', KEYS[2], id)
  if raw then out[#out + 1] = raw end
end
return out
`)

// KEYS: the queue's set, its hash. ARGV: id.
var ackScript = valkey.NewLuaScript(`
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return 1
`)

func (s *Store) queueKeys(queue string) []string {
	return []string{s.k.queuePrefix + queue, s.k.queueEventsPrefix + queue}
}

// Enqueue implements reaper.EventQueue.
func (s *Store) Enqueue(ctx context.Context, queue string, ev reaper.QueuedEvent, limit int) (int, error) {
	raw, err := json.Marshal(ev)
	if err != nil {
		return 0, fmt.Errorf("valkeystore: Enqueue %s: %w", ev.ID, err)
	}
	var dropped int64
	err = s.call(ctx, "Enqueue", func(ctx context.Context) error {
		keys := append(s.queueKeys(queue), s.k.queueSeq)
		dropped, err = enqueueScript.Exec(ctx, s.client, keys,
			[]string{ev.ID, string(raw), strconv.Itoa(max(limit, 1))}).AsInt64()
		return err
	})
	return int(dropped), err
}

// Pending implements reaper.EventQueue. An event that cannot be decoded makes
// the call fail with ErrCorrupt.
func (s *Store) Pending(ctx context.Context, queue string, limit int) ([]reaper.QueuedEvent, error) {
	var raws []string
	err := s.call(ctx, "Pending", func(ctx context.Context) (err error) {
		raws, err = pendingScript.Exec(ctx, s.client, s.queueKeys(queue), []string{strconv.Itoa(max(limit, 1))}).AsStrSlice()
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]reaper.QueuedEvent, len(raws))
	for i, raw := range raws {
		if err := json.Unmarshal([]byte(raw), &out[i]); err != nil {
			return nil, fmt.Errorf("%w: webhook queue %s: %v", ErrCorrupt, queue, err)
		}
	}
	return out, nil
}

// Ack implements reaper.EventQueue.
func (s *Store) Ack(ctx context.Context, queue, id string) error {
	return s.call(ctx, "Ack", func(ctx context.Context) error {
		return ackScript.Exec(ctx, s.client, s.queueKeys(queue), []string{id}).Error()
	})
}
