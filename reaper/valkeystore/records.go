package valkeystore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/valkey-io/valkey-go"

	"github.com/reapergw/reaper/reaper"
)

// The term fence. Terms are compared as decimal strings (longer is larger, then
// byte order), since Lua's numbers are doubles and a uint64 may not fit one.
// When the status changes, the transition goes to the app's history in the same
// script: the stored status is read from the stored record (a record that cannot
// be decoded counts as none: WaitingForInit).
// KEYS: records, terms, the app's history list. ARGV: app, term, record JSON,
// channel, status, cause, time of the change (RFC 3339), history cap, the
// wake's phases (JSON, or "") that the entry carries when the change is from
// WaitingForUp (reaper.UpPhases).
// Returns {"ok"} or {"stale", stored term}.
var putRecordScript = valkey.NewLuaScript(`
local old = redis.call('HGET', KEYS[2], ARGV[1])
if old and (#old > #ARGV[2] or (#old == #ARGV[2] and old > ARGV[2])) then
  return {'stale', old}
end
local from = 'WaitingForInit'
local stored = redis.call('HGET', KEYS[1], ARGV[1])
if stored then
  local ok, rec = pcall(cjson.decode, stored)
  if ok and type(rec) == 'table' and type(rec.status) == 'string' then
    from = rec.status
  end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
if from ~= ARGV[5] then
  local entry = {app_id = ARGV[1], from = from, to = ARGV[5], cause = ARGV[6], at = ARGV[7]}
  if from == 'WaitingForUp' and ARGV[9] ~= '' then
    entry.phases = cjson.decode(ARGV[9])
  end
  redis.call('LPUSH', KEYS[3], cjson.encode(entry))
  redis.call('LTRIM', KEYS[3], 0, tonumber(ARGV[8]) - 1)
end
redis.call('PUBLISH', ARGV[4], ARGV[1])
return {'ok'}
`)

// KEYS: records, terms. ARGV: app, term, channel. Returns as putRecordScript; an
// unknown app is "ok" and publishes nothing.
var deleteRecordScript = valkey.NewLuaScript(`
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  redis.call('HDEL', KEYS[2], ARGV[1])
  return {'ok'}
end
local old = redis.call('HGET', KEYS[2], ARGV[1]) or '0'
if #old > #ARGV[2] or (#old == #ARGV[2] and old > ARGV[2]) then
  return {'stale', old}
end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('PUBLISH', ARGV[3], ARGV[1])
return {'ok'}
`)

// Record implements reaper.RecordStore: one HGET.
func (s *Store) Record(ctx context.Context, appID string) (reaper.Record, bool, error) {
	var raw string
	var found bool
	err := s.call(ctx, "Record", func(ctx context.Context) error {
		v, err := s.client.Do(ctx, s.client.B().Hget().Key(s.k.records).Field(appID).Build()).ToString()
		if valkey.IsValkeyNil(err) {
			return nil
		}
		raw, found = v, err == nil
		return err
	})
	if err != nil || !found {
		return reaper.Record{}, false, err
	}
	var rec reaper.Record
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		return reaper.Record{}, false, fmt.Errorf("%w: record of %s: %v", ErrCorrupt, appID, err)
	}
	return rec, true, nil
}

// Records implements reaper.RecordStore: one HGETALL, sorted by app id. A record
// that cannot be decoded is left out and logged at Error, so that one bad value
// does not hide every app from the leader.
func (s *Store) Records(ctx context.Context) ([]reaper.Record, error) {
	var raws map[string]string
	err := s.call(ctx, "Records", func(ctx context.Context) error {
		var err error
		raws, err = s.client.Do(ctx, s.client.B().Hgetall().Key(s.k.records).Build()).AsStrMap()
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]reaper.Record, 0, len(raws))
	for app, raw := range raws {
		var rec reaper.Record
		if err := json.Unmarshal([]byte(raw), &rec); err != nil {
			s.log.Error("valkeystore: corrupt record left out", "app", app, "key", s.k.records, "err", err)
			continue
		}
		out = append(out, rec)
	}
	slices.SortFunc(out, func(a, b reaper.Record) int { return strings.Compare(a.AppID, b.AppID) })
	return out, nil
}

// PutRecord implements reaper.RecordStore. The term check, the write, the history
// entry of a change of status and the notification of every node (PUBLISH) are
// one script, so a deposed leader can never overwrite its successor's record,
// however their calls interleave, and no record is ever stored without its
// history entry. Idempotent (a retried call finds the status unchanged);
// reaper.ErrStaleTerm when the stored record has a later term.
func (s *Store) PutRecord(ctx context.Context, rec reaper.Record) error {
	raw, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("valkeystore: PutRecord %s: %w", rec.AppID, err)
	}
	at, err := rec.LastStatusUpdate.MarshalText() // RFC 3339, as Transition.At decodes it
	if err != nil {
		return fmt.Errorf("valkeystore: PutRecord %s: %w", rec.AppID, err)
	}
	var phases []byte
	// The script attaches them only if the stored status is WaitingForUp.
	if w := reaper.UpPhases(reaper.StatusWaitingForUp, rec); w != nil {
		if phases, err = json.Marshal(w); err != nil {
			return fmt.Errorf("valkeystore: PutRecord %s: %w", rec.AppID, err)
		}
	}
	term := strconv.FormatUint(rec.Term, 10)
	return s.fenced(ctx, "PutRecord", rec.AppID, rec.Term, putRecordScript,
		[]string{s.k.records, s.k.terms, s.k.historyPrefix + rec.AppID},
		[]string{rec.AppID, term, string(raw), s.k.channel, string(rec.Status), rec.Cause, string(at), strconv.Itoa(reaper.HistoryCap), string(phases)})
}

// DeleteRecord implements reaper.RecordStore, with the same term rule as
// PutRecord. It removes the record only (history, access time and ask stay) and
// tells the watchers. Deleting an unknown app is not an error.
func (s *Store) DeleteRecord(ctx context.Context, appID string, term uint64) error {
	return s.fenced(ctx, "DeleteRecord", appID, term, deleteRecordScript,
		[]string{s.k.records, s.k.terms}, []string{appID, strconv.FormatUint(term, 10), s.k.channel})
}

// fenced runs one of the term-fenced scripts.
func (s *Store) fenced(ctx context.Context, op, appID string, term uint64, script *valkey.Lua, keys, args []string) error {
	var reply []string
	err := s.call(ctx, op, func(ctx context.Context) error {
		var err error
		reply, err = script.Exec(ctx, s.client, keys, args).AsStrSlice()
		return err
	})
	if err != nil {
		return err
	}
	if len(reply) == 2 && reply[0] == "stale" {
		return fmt.Errorf("%w: app %s: stored term %s, given %d", reaper.ErrStaleTerm, appID, reply[1], term)
	}
	if len(reply) != 1 || reply[0] != "ok" {
		return fmt.Errorf("valkeystore: %s %s: unexpected script reply %q", op, appID, reply)
	}
	return nil
}

// Settings implements reaper.SettingsStore: one GET; the zero Settings when none
// were put.
func (s *Store) Settings(ctx context.Context) (reaper.Settings, error) {
	var raw string
	err := s.call(ctx, "Settings", func(ctx context.Context) error {
		v, err := s.client.Do(ctx, s.client.B().Get().Key(s.k.settings).Build()).ToString()
		if valkey.IsValkeyNil(err) {
			return nil
		}
		raw = v
		return err
	})
	var set reaper.Settings
	if err != nil || raw == "" {
		return set, err
	}
	if err := json.Unmarshal([]byte(raw), &set); err != nil {
		return reaper.Settings{}, fmt.Errorf("%w: settings: %v", ErrCorrupt, err)
	}
	return set, nil
}

// PutSettings implements reaper.SettingsStore: one SET. Idempotent.
func (s *Store) PutSettings(ctx context.Context, set reaper.Settings) error {
	raw, err := json.Marshal(set)
	if err != nil {
		return fmt.Errorf("valkeystore: PutSettings: %w", err)
	}
	return s.call(ctx, "PutSettings", func(ctx context.Context) error {
		return s.client.Do(ctx, s.client.B().Set().Key(s.k.settings).Value(string(raw)).Build()).Error()
	})
}
