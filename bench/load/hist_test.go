package load

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestBucket_RangeHoldsTheValueWithinPrecision(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	values := []uint64{0, 1, 255, 256, 257, 511, 512, 1000, 1 << 40, 1<<63 - 1}
	for range 10000 {
		values = append(values, rng.Uint64N(1<<uint(rng.IntN(63)+1)))
	}
	for _, v := range values {
		i := bucketOf(v)
		if i < 0 || i >= histBuckets {
			t.Fatalf("bucketOf(%d) = %d, outside [0, %d)", v, i, histBuckets)
		}
		lo, width := bucketRange(i)
		if v < lo || v-lo >= width {
			t.Fatalf("value %d in bucket %d = [%d, %d)", v, i, lo, lo+width)
		}
		if v >= 1<<histBits && float64(width)/float64(lo) > 1.0/128 {
			t.Fatalf("bucket %d = [%d, +%d): wider than 1/128 of its start", i, lo, width)
		}
	}
}

func TestBucket_RangesAreContiguous(t *testing.T) {
	next := uint64(0)
	for i := range bucketOf(1<<63 - 1) {
		lo, width := bucketRange(i)
		if lo != next {
			t.Fatalf("bucket %d starts at %d, want %d", i, lo, next)
		}
		next = lo + width
	}
}

func TestHistogram_Quantiles(t *testing.T) {
	h := NewHistogram()
	if h.Quantile(0.5) != 0 || h.Count() != 0 {
		t.Fatalf("empty: p50 %v, count %d", h.Quantile(0.5), h.Count())
	}
	// 1 µs to 10 000 µs, shuffled: the p-quantile is p·10 000 µs.
	rng := rand.New(rand.NewPCG(3, 4))
	for _, i := range rng.Perm(10000) {
		h.Record(time.Duration(i+1) * time.Microsecond)
	}
	for _, tt := range []struct {
		q    float64
		want time.Duration
	}{
		{0.5, 5000 * time.Microsecond},
		{0.9, 9000 * time.Microsecond},
		{0.99, 9900 * time.Microsecond},
		{0, time.Microsecond},
		{1, 10000 * time.Microsecond},
	} {
		got := h.Quantile(tt.q)
		if diff := float64(got-tt.want) / float64(tt.want); diff < -0.01 || diff > 0.01 {
			t.Errorf("Quantile(%v) = %v, want %v within 1%%", tt.q, got, tt.want)
		}
	}
	if h.Count() != 10000 || h.Max() != 10*time.Millisecond {
		t.Errorf("count %d, max %v", h.Count(), h.Max())
	}
}

func TestHistogram_OneValueIsExact(t *testing.T) {
	h := NewHistogram()
	h.Record(123456789 * time.Nanosecond)
	for _, q := range []float64{0, 0.5, 0.99, 1} {
		if got := h.Quantile(q); got != 123456789*time.Nanosecond {
			t.Errorf("Quantile(%v) = %v, want the single value", q, got)
		}
	}
	h.Record(-time.Second) // counted as 0
	if h.Quantile(0) != 0 || h.Count() != 2 {
		t.Errorf("after a negative value: min %v, count %d", h.Quantile(0), h.Count())
	}
}

func TestHistogram_MergeEqualsRecordingEverything(t *testing.T) {
	all, a, b := NewHistogram(), NewHistogram(), NewHistogram()
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 5000 {
		d := time.Duration(rng.Int64N(int64(50 * time.Millisecond)))
		all.Record(d)
		if i%3 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	merged := NewHistogram()
	merged.Merge(NewHistogram()) // an empty one changes nothing
	merged.Merge(a)
	merged.Merge(b)
	for _, q := range []float64{0, 0.1, 0.5, 0.99, 0.999, 1} {
		if merged.Quantile(q) != all.Quantile(q) {
			t.Errorf("Quantile(%v): merged %v, all %v", q, merged.Quantile(q), all.Quantile(q))
		}
	}
	if merged.Count() != all.Count() || merged.Max() != all.Max() {
		t.Errorf("merged count %d max %v, all count %d max %v", merged.Count(), merged.Max(), all.Count(), all.Max())
	}
}
