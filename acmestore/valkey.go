// Package acmestore keeps what automatic HTTPS needs (certificates, their keys,
// ACME accounts, challenge tokens, locks) in the cluster's Valkey, as a
// certmagic.Storage: every node reads the same certificates, and one node at a
// time obtains or renews one (certmagic takes a lock of the store around it).
//
// The layout of the keys, under Options.Prefix (reaper passes the store's prefix
// and "acme/", so "reaper:acme/"):
//
//	files/<key>   hash    v: the value, m: when it was stored (unix ms)
//	index         zset    every stored key (score 0), ordered by name, for List,
//	                      Exists and Delete of "directories"
//	locks/<name>  string  the holder's random token, with a ttl it refreshes
//
// A single node (store.driver memory) uses certmagic's FileStorage instead; both
// pass the same contract tests (contract_test.go).
package acmestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/valkey-io/valkey-go"
)

// Options configures New.
type Options struct {
	// Client is the connection to Valkey (the cluster store's). Required; New
	// does not close it.
	Client valkey.Client
	// Prefix starts every key; required (reaper gives "<store prefix>acme/").
	Prefix string
	// Timeout bounds each call to Valkey, on top of the caller's context;
	// default 5 s.
	Timeout time.Duration
	// LockTTL is how long a lock outlives a holder that stopped refreshing it (a
	// node that died); the holder refreshes it every third of it. Default 30 s.
	LockTTL time.Duration
	// LockPoll is how often a waiting Lock tries again; default 500 ms.
	LockPoll time.Duration
	// Logger receives the locks' refresh trouble; default: discard.
	Logger *slog.Logger
}

// Defaults of Options.
const (
	DefaultTimeout  = 5 * time.Second
	DefaultLockTTL  = 30 * time.Second
	DefaultLockPoll = 500 * time.Millisecond
	// MaxList bounds the keys one List returns; certmagic lists a few per site.
	MaxList = 100_000
)

// Errors of the store. A missing key is fs.ErrNotExist, as certmagic expects.
var (
	// ErrLockLost: Unlock found the lock expired or taken by another holder.
	ErrLockLost = errors.New("acmestore: lock lost")
	// ErrTooMany: a List would return more than MaxList keys.
	ErrTooMany = errors.New("acmestore: too many keys")
)

// Valkey is a certmagic.Storage in Valkey. It is safe for concurrent use; every
// method blocks for one or two round trips, bounded by its context and
// Options.Timeout, except Lock, which waits for the lock until its context ends.
type Valkey struct {
	client valkey.Client
	opts   Options
	files  string // Prefix + "files/"
	index  string
	locks  string
	log    *slog.Logger

	mu     sync.Mutex
	held   map[string]*heldLock // lock name → the lock this value holds
	closed bool
}

var _ certmagic.Storage = (*Valkey)(nil)

// New returns the storage; it makes no call to Valkey. Call Close when done.
func New(opts Options) (*Valkey, error) {
	if opts.Client == nil || opts.Prefix == "" {
		return nil, errors.New("acmestore: a client and a prefix are required")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.LockTTL <= 0 {
		opts.LockTTL = DefaultLockTTL
	}
	if opts.LockPoll <= 0 {
		opts.LockPoll = DefaultLockPoll
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Valkey{
		client: opts.Client, opts: opts, log: opts.Logger, held: map[string]*heldLock{},
		files: opts.Prefix + "files/", index: opts.Prefix + "index", locks: opts.Prefix + "locks/",
	}, nil
}

// String names the storage in certmagic's logs.
func (s *Valkey) String() string { return "valkey:" + s.opts.Prefix }

// KEYS: the file's hash, the index. ARGV: key, value, modified (unix ms).
var storeScript = valkey.NewLuaScript(`
redis.call('HSET', KEYS[1], 'v', ARGV[2], 'm', ARGV[3])
redis.call('ZADD', KEYS[2], 0, ARGV[1])
return 1
`)

// KEYS: the index. ARGV: the files' prefix, key, then the bounds of the keys
// below it. The keys below are named from the index: a "directory" is deleted
// with everything in it.
var deleteScript = valkey.NewLuaScript(`
redis.call('DEL', ARGV[1] .. ARGV[2])
redis.call('ZREM', KEYS[1], ARGV[2])
local under = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[3], ARGV[4])
for _, k in ipairs(under) do
  redis.call('DEL', ARGV[1] .. k)
  redis.call('ZREM', KEYS[1], k)
end
return #under
`)

// KEYS: the file's hash, the index. ARGV: the bounds of the keys below it.
// {1, modified, size} for a file, {2} for a directory, {0} for nothing.
var statScript = valkey.NewLuaScript(`
local m = redis.call('HGET', KEYS[1], 'm')
if m then
  return {1, m, redis.call('HSTRLEN', KEYS[1], 'v')}
end
if #redis.call('ZRANGEBYLEX', KEYS[2], ARGV[1], ARGV[2], 'LIMIT', 0, 1) > 0 then
  return {2}
end
return {0}
`)

// below returns the ZRANGEBYLEX bounds of the keys below key: "key/…", that
// is from "[key/" to "(key0" ('0' follows '/'); every key for the root "".
func below(key string) (lo, hi string) {
	if key == "" {
		return "-", "+"
	}
	return "[" + key + "/", "(" + key + "0"
}

// Store implements certmagic.Storage: the value and the index in one script.
func (s *Valkey) Store(ctx context.Context, key string, value []byte) error {
	return s.call(ctx, "store", key, func(ctx context.Context) error {
		return storeScript.Exec(ctx, s.client, []string{s.files + key, s.index},
			[]string{key, string(value), strconv.FormatInt(time.Now().UnixMilli(), 10)}).Error()
	})
}

// Load implements certmagic.Storage; fs.ErrNotExist when there is no such key.
func (s *Valkey) Load(ctx context.Context, key string) ([]byte, error) {
	var out []byte
	err := s.call(ctx, "load", key, func(ctx context.Context) error {
		b, err := s.client.Do(ctx, s.client.B().Hget().Key(s.files+key).Field("v").Build()).AsBytes()
		if valkey.IsValkeyNil(err) {
			return fs.ErrNotExist
		}
		out = b
		return err
	})
	return out, err
}

// Delete implements certmagic.Storage: key, and every key below it, in one
// script. A missing key is not an error.
func (s *Valkey) Delete(ctx context.Context, key string) error {
	lo, hi := below(key)
	return s.call(ctx, "delete", key, func(ctx context.Context) error {
		return deleteScript.Exec(ctx, s.client, []string{s.index}, []string{s.files, key, lo, hi}).Error()
	})
}

// Exists implements certmagic.Storage: a file, or a directory (a prefix of
// files). An error counts as false.
func (s *Valkey) Exists(ctx context.Context, key string) bool {
	_, err := s.Stat(ctx, key)
	return err == nil
}

// Stat implements certmagic.Storage; fs.ErrNotExist when there is no such key.
func (s *Valkey) Stat(ctx context.Context, key string) (certmagic.KeyInfo, error) {
	info := certmagic.KeyInfo{Key: key}
	lo, hi := below(key)
	err := s.call(ctx, "stat", key, func(ctx context.Context) error {
		vals, err := statScript.Exec(ctx, s.client, []string{s.files + key, s.index}, []string{lo, hi}).ToArray()
		if err != nil {
			return err
		}
		kind, err := vals[0].AsInt64()
		switch {
		case err != nil:
			return err
		case kind == 0:
			return fs.ErrNotExist
		case kind == 2:
			return nil
		}
		ms, err := vals[1].AsInt64() // a Lua string comes back as a bulk string
		if err != nil {
			return err
		}
		info.IsTerminal, info.Modified = true, time.UnixMilli(ms)
		info.Size, err = vals[2].AsInt64()
		return err
	})
	return info, err
}

// List implements certmagic.Storage, as FileStorage does: the keys right below
// prefix, files and directories alike; with recursive, every key below it,
// directories included. fs.ErrNotExist when nothing is stored at or below
// prefix; an empty list when prefix is a file.
func (s *Valkey) List(ctx context.Context, prefix string, recursive bool) ([]string, error) {
	var keys []string
	err := s.call(ctx, "list", prefix, func(ctx context.Context) error {
		lo, hi := below(prefix)
		got, err := s.client.Do(ctx, s.client.B().Zrangebylex().Key(s.index).Min(lo).Max(hi).Limit(0, MaxList+1).Build()).AsStrSlice()
		if err != nil {
			return err
		}
		if len(got) > MaxList {
			return fmt.Errorf("%w: more than %d below %q", ErrTooMany, MaxList, prefix)
		}
		if len(got) > 0 {
			keys = children(prefix, got, recursive)
			return nil
		}
		n, err := s.client.Do(ctx, s.client.B().Exists().Key(s.files+prefix).Build()).AsInt64()
		if err == nil && n == 0 {
			return fs.ErrNotExist
		}
		return err
	})
	return keys, err
}

// children turns the stored keys below prefix into List's answer: each key's
// first component below prefix, or (recursive) every component on its way.
func children(prefix string, stored []string, recursive bool) []string {
	base := prefix
	if base != "" {
		base += "/"
	}
	seen := map[string]bool{}
	var out []string
	add := func(k string) {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	for _, k := range stored {
		rest := strings.TrimPrefix(k, base)
		if !recursive {
			if i := strings.IndexByte(rest, '/'); i >= 0 {
				rest = rest[:i] // a directory right below prefix
			}
			add(base + rest)
			continue
		}
		for i := range len(rest) {
			if rest[i] == '/' {
				add(base + rest[:i])
			}
		}
		add(base + rest)
	}
	return out
}

// call runs f with ctx bounded by the store's timeout, and names the operation
// and the key in its error (never the value). fs.ErrNotExist and ErrTooMany
// come back as they are, wrapped.
func (s *Valkey) call(ctx context.Context, op, key string, f func(ctx context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	err := f(cctx)
	if err == nil {
		return nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("acmestore: %s %q: %w", op, key, fs.ErrNotExist)
	}
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	return fmt.Errorf("acmestore: %s %q: %w", op, key, err)
}
