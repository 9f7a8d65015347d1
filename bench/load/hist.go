package load

import (
	"math/bits"
	"time"
)

// histBits is the precision of the histogram: each power of two is split into
// 2^(histBits-1) buckets, so a recorded value is known to within 1/128 (0.8 %).
const histBits = 8

// histBuckets covers every int64 duration: 2^histBits exact small values, then
// 2^(histBits-1) buckets for each of the remaining 64-histBits powers of two.
const histBuckets = 1<<histBits + (64-histBits)<<(histBits-1)

// Histogram records durations in log-linear buckets: fixed memory (about 60 KiB)
// however many values are recorded, and quantiles within 0.8 % of the exact
// value. The zero value is not usable: call NewHistogram. Not safe for concurrent
// use: give each worker its own and Merge them.
type Histogram struct {
	counts []uint64
	n      uint64
	min    time.Duration
	max    time.Duration
}

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram {
	return &Histogram{counts: make([]uint64, histBuckets)}
}

// bucketOf returns the bucket of v (v ≥ 0).
func bucketOf(v uint64) int {
	if v < 1<<histBits {
		return int(v)
	}
	e := bits.Len64(v) - histBits // ≥ 1: v>>e has exactly histBits bits
	return 1<<histBits + (e-1)<<(histBits-1) + int(v>>e) - 1<<(histBits-1)
}

// bucketRange returns the smallest value of bucket i and the width of the bucket.
func bucketRange(i int) (lo, width uint64) {
	if i < 1<<histBits {
		return uint64(i), 1
	}
	j := i - 1<<histBits
	e := j>>(histBits-1) + 1
	mant := uint64(j&(1<<(histBits-1)-1)) + 1<<(histBits-1)
	return mant << e, 1 << e
}

// Record adds one value; negative values count as 0.
func (h *Histogram) Record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[bucketOf(uint64(d))]++
	if h.n == 0 || d < h.min {
		h.min = d
	}
	if d > h.max {
		h.max = d
	}
	h.n++
}

// Merge adds every value of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
}

// Count returns how many values were recorded.
func (h *Histogram) Count() uint64 { return h.n }

// Max returns the largest value recorded (0 when empty).
func (h *Histogram) Max() time.Duration { return h.max }

// Quantile returns the value below which a fraction q (0 to 1) of the recorded
// values lie: the middle of the bucket holding that rank, clamped to the smallest
// and largest values recorded. It returns 0 when the histogram is empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	q = min(max(q, 0), 1)
	// The rank of the wanted value, 1-based: the ceiling of q·n, at least 1.
	rank := uint64(q * float64(h.n))
	if float64(rank) < q*float64(h.n) || rank == 0 {
		rank++
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, width := bucketRange(i)
			v := time.Duration(lo + width/2)
			return min(max(v, h.min), h.max)
		}
	}
	return h.max
}
