package valkeystore

import (
	"context"
	"strconv"
	"time"

	"github.com/valkey-io/valkey-go"
)

// Wake asks live in two structures: a hash of app → time of the latest ask (unix
// microseconds) and a sorted set of app → expiry (unix milliseconds on the server's
// clock, so that every node agrees on when an ask dies). Each script reads the
// clock with TIME.

// KEYS: asks, asks-expiry. ARGV: app, at, ttl in ms. A live ask keeps the later of
// the two times and the later of the two expiries.
var askWakeScript = valkey.NewLuaScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local at = ARGV[2]
local exp = now + tonumber(ARGV[3])
local oldExp = redis.call('ZSCORE', KEYS[2], ARGV[1])
if oldExp and tonumber(oldExp) > now then
  local oldAt = redis.call('HGET', KEYS[1], ARGV[1])
  if oldAt and tonumber(oldAt) > tonumber(at) then at = oldAt end
  if tonumber(oldExp) > exp then exp = tonumber(oldExp) end
end
if exp > now then
  redis.call('HSET', KEYS[1], ARGV[1], at)
  redis.call('ZADD', KEYS[2], exp, ARGV[1])
end
return 1
`)

// KEYS: asks, asks-expiry. Drops the expired asks and returns the others, as
// HGETALL does.
var wakeAsksScript = valkey.NewLuaScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local dead = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)
for _, app in ipairs(dead) do
  redis.call('HDEL', KEYS[1], app)
end
if #dead > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
end
return redis.call('HGETALL', KEYS[1])
`)

// KEYS: asks, asks-expiry. ARGV: app, upTo. Compare-and-delete: an ask made after
// upTo stays.
var clearWakeScript = valkey.NewLuaScript(`
local at = redis.call('HGET', KEYS[1], ARGV[1])
if at and tonumber(at) <= tonumber(ARGV[2]) then
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
  return 1
end
return 0
`)

// AskWake implements reaper.AskStore: one script. The ask is kept ttl from now (on
// the server's clock, to the millisecond); an ask whose time is not later than the
// stored one keeps the stored time, but still keeps the ask alive for ttl.
// Times are kept to the microsecond. Idempotent.
func (s *Store) AskWake(ctx context.Context, appID string, at time.Time, ttl time.Duration) error {
	return s.call(ctx, "AskWake", func(ctx context.Context) error {
		return askWakeScript.Exec(ctx, s.client, []string{s.k.asks, s.k.asksExpiry},
			[]string{appID, strconv.FormatInt(at.UnixMicro(), 10), strconv.FormatInt(ceilMillis(ttl), 10)}).Error()
	})
}

// WakeAsks implements reaper.AskStore: one script, which also forgets the expired
// asks. Times are in UTC.
func (s *Store) WakeAsks(ctx context.Context) (map[string]time.Time, error) {
	var raw map[string]string
	err := s.call(ctx, "WakeAsks", func(ctx context.Context) error {
		var err error
		raw, err = wakeAsksScript.Exec(ctx, s.client, []string{s.k.asks, s.k.asksExpiry}, nil).AsStrMap()
		return err
	})
	if err != nil {
		return nil, err
	}
	return parseTimes("wake ask", raw)
}

// ClearWake implements reaper.AskStore: one compare-and-delete script. upTo is
// taken to the microsecond, rounded down, as asks are stored. Idempotent.
func (s *Store) ClearWake(ctx context.Context, appID string, upTo time.Time) error {
	return s.call(ctx, "ClearWake", func(ctx context.Context) error {
		return clearWakeScript.Exec(ctx, s.client, []string{s.k.asks, s.k.asksExpiry},
			[]string{appID, strconv.FormatInt(upTo.UnixMicro(), 10)}).Error()
	})
}
