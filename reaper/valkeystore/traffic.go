package valkeystore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/valkey-io/valkey-go"
)

// Merge by max. Times are unix microseconds: below 2^53, so Lua's doubles compare
// them exactly. The given string is stored as is (Lua would print a large number in
// exponent form).
// KEYS: access. ARGV: app, time, app, time...
var touchAccessScript = valkey.NewLuaScript(`
for i = 1, #ARGV, 2 do
  local old = redis.call('HGET', KEYS[1], ARGV[i])
  if not old or tonumber(old) < tonumber(ARGV[i+1]) then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i+1])
  end
end
return 1
`)

// Replace a node's counts: the hash is rebuilt and given the node's ttl, and the
// node is listed so InFlight finds it.
// KEYS: inflight:<node>, inflight-nodes. ARGV: node, ttl in ms, app, count...
var setInFlightScript = valkey.NewLuaScript(`
redis.call('DEL', KEYS[1])
if #ARGV < 3 or tonumber(ARGV[2]) <= 0 then
  redis.call('SREM', KEYS[2], ARGV[1])
  return 0
end
for i = 3, #ARGV, 2 do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i+1])
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('SADD', KEYS[2], ARGV[1])
return 1
`)

// Forget nodes whose counts expired, checking again inside the script so that a
// node that has just set its counts again is kept.
// KEYS: inflight-nodes, inflight:<node>... ARGV: node... (same order)
var forgetNodesScript = valkey.NewLuaScript(`
for i = 1, #ARGV do
  if redis.call('EXISTS', KEYS[i+1]) == 0 then
    redis.call('SREM', KEYS[1], ARGV[i])
  end
end
return 1
`)

// TouchAccess implements reaper.TrafficStore: one script that keeps, per app, the
// later of the stored and the given time. Times are kept to the microsecond.
// Idempotent.
func (s *Store) TouchAccess(ctx context.Context, access map[string]time.Time) error {
	if len(access) == 0 {
		return s.call(ctx, "TouchAccess", func(context.Context) error { return nil })
	}
	args := make([]string, 0, 2*len(access))
	for app, at := range access {
		args = append(args, app, strconv.FormatInt(at.UnixMicro(), 10))
	}
	return s.call(ctx, "TouchAccess", func(ctx context.Context) error {
		return touchAccessScript.Exec(ctx, s.client, []string{s.k.access}, args).Error()
	})
}

// LastAccess implements reaper.TrafficStore: one HGETALL. Times are in UTC.
func (s *Store) LastAccess(ctx context.Context) (map[string]time.Time, error) {
	var raw map[string]string
	err := s.call(ctx, "LastAccess", func(ctx context.Context) error {
		var err error
		raw, err = s.client.Do(ctx, s.client.B().Hgetall().Key(s.k.access).Build()).AsStrMap()
		return err
	})
	if err != nil {
		return nil, err
	}
	return parseTimes("access time", raw)
}

// parseTimes decodes a hash of unix microseconds.
func parseTimes(what string, raw map[string]string) (map[string]time.Time, error) {
	out := make(map[string]time.Time, len(raw))
	for app, v := range raw {
		us, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: %s of %s: %q", ErrCorrupt, what, app, v)
		}
		out[app] = time.UnixMicro(us).UTC()
	}
	return out, nil
}

// SetInFlight implements reaper.TrafficStore: one script replaces node's counts
// and sets their expiry, on the server's clock, ttl from now (to the millisecond,
// rounded up). Counts of 0 are left out; empty counts or a ttl of 0 or less remove
// the node's counts. Idempotent.
func (s *Store) SetInFlight(ctx context.Context, node string, counts map[string]int, ttl time.Duration) error {
	args := []string{node, strconv.FormatInt(ceilMillis(ttl), 10)}
	for app, n := range counts {
		if n != 0 {
			args = append(args, app, strconv.Itoa(n))
		}
	}
	return s.call(ctx, "SetInFlight", func(ctx context.Context) error {
		return setInFlightScript.Exec(ctx, s.client,
			[]string{s.k.inflightPrefix + node, s.k.inflightNodes}, args).Error()
	})
}

// InFlight implements reaper.TrafficStore: the listed nodes (SMEMBERS), then all
// their counts in one pipeline; nodes whose counts expired are forgotten in a
// third round trip. Apps with no live count are absent.
func (s *Store) InFlight(ctx context.Context) (map[string]int, error) {
	out := map[string]int{}
	err := s.call(ctx, "InFlight", func(ctx context.Context) error {
		nodes, err := s.client.Do(ctx, s.client.B().Smembers().Key(s.k.inflightNodes).Build()).AsStrSlice()
		if err != nil || len(nodes) == 0 {
			return err
		}
		cmds := make(valkey.Commands, len(nodes))
		for i, node := range nodes {
			cmds[i] = s.client.B().Hgetall().Key(s.k.inflightPrefix + node).Build()
		}
		gone := []string{s.k.inflightNodes}
		var goneNodes []string
		for i, res := range s.client.DoMulti(ctx, cmds...) {
			counts, err := res.AsStrMap()
			if err != nil {
				return err
			}
			if len(counts) == 0 { // expired: the node stopped setting its counts
				gone = append(gone, s.k.inflightPrefix+nodes[i])
				goneNodes = append(goneNodes, nodes[i])
			}
			for app, v := range counts {
				n, err := strconv.Atoi(v)
				if err != nil {
					return fmt.Errorf("%w: in-flight count of %s on %s: %q", ErrCorrupt, app, nodes[i], v)
				}
				out[app] += n
			}
		}
		if len(goneNodes) == 0 {
			return nil
		}
		return forgetNodesScript.Exec(ctx, s.client, gone, goneNodes).Error()
	})
	if err != nil {
		return nil, err
	}
	for app, n := range out {
		if n == 0 {
			delete(out, app)
		}
	}
	return out, nil
}

// ceilMillis is d in whole milliseconds, rounded up, so that a positive ttl never
// becomes 0.
func ceilMillis(d time.Duration) int64 {
	ms := d.Milliseconds()
	if time.Duration(ms)*time.Millisecond < d {
		ms++
	}
	return ms
}
