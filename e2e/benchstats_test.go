package e2e

import (
	"testing"
	"time"
)

// The statistics behind BENCHMARKS.md's throughput table.

func TestPairedRatioIsTheMedianOfEachRoundsRatio(t *testing.T) {
	ms := func(xs ...int) []time.Duration {
		var ds []time.Duration
		for _, x := range xs {
			ds = append(ds, time.Duration(x)*time.Millisecond)
		}
		return ds
	}
	// Round 2 ran under heavy load for both: its ratio is 1.0 although its
	// times are far from the others'. The median of the medians would say
	// 4100/4000; the rounds say 1.1, 1.0, 0.9.
	wrap, script := ms(4400, 9000, 3600), ms(4000, 9000, 4000)
	if got := pairedRatio(wrap, script); got != 1.0 {
		t.Fatalf("pairedRatio = %v, want 1.0", got)
	}
	if got := medianOf([]float64{3, 1, 4, 2}); got != 2.5 {
		t.Fatalf("medianOf of an even count = %v, want 2.5", got)
	}
}

func TestMedianIntervalBracketsTheMedianAndNarrowsWithAgreement(t *testing.T) {
	noisy := []float64{0.92, 1.10, 0.97, 1.06, 1.01, 0.95, 1.12, 1.03, 0.99, 1.08, 0.94, 1.05, 1.00, 1.07, 0.96}
	lo, hi := medianInterval(noisy)
	med := medianOf(noisy)
	if !(lo <= med && med <= hi) || lo == hi {
		t.Fatalf("interval %v–%v for median %v of noisy rounds: want it around the median and wider than a point", lo, hi, med)
	}
	if lo2, hi2 := medianInterval(noisy); lo2 != lo || hi2 != hi {
		t.Fatalf("the same rounds gave %v–%v, then %v–%v: the interval must be reproducible", lo, hi, lo2, hi2)
	}
	if lo, hi := medianInterval([]float64{1.04, 1.04, 1.04, 1.04, 1.04}); lo != 1.04 || hi != 1.04 {
		t.Fatalf("rounds that all agree gave %v–%v, want 1.04–1.04", lo, hi)
	}
	// Rounds all below 1.00 give an interval below 1.00: a bound met by
	// this run, not by chance.
	if _, hi := medianInterval([]float64{0.95, 0.97, 0.96, 0.98, 0.94, 0.97, 0.96}); hi >= 1.0 {
		t.Fatalf("rounds all below 1.00 gave an interval reaching %v", hi)
	}
}
