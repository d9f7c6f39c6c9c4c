package store

import (
	"bytes"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// The id ranges of a split count cover the UUID space once: the first
// starts at the lowest UUID, the last ends at the highest, and each starts
// right after the one before it ends.
func TestIDRangesCoverTheUUIDSpace(t *testing.T) {
	top := uuid.UUID{}
	for i := range top {
		top[i] = 0xff
	}
	for _, n := range []int{1, 2, 3, 7, 256} {
		var prevHi uuid.UUID
		for i := range n {
			lo, hi := idRange(i, n)
			require.Negative(t, bytes.Compare(lo[:], hi[:]), "n=%d i=%d", n, i)
			require.Equal(t, make([]byte, 15), lo[1:], "n=%d i=%d starts at the lowest id of its first byte", n, i)
			require.Equal(t, bytes.Repeat([]byte{0xff}, 15), hi[1:], "n=%d i=%d ends at the highest id of its last byte", n, i)
			if i == 0 {
				require.Equal(t, uuid.UUID{}, lo)
			} else {
				next := prevHi
				next[0]++
				for j := 1; j < len(next); j++ {
					next[j] = 0
				}
				require.Equal(t, next, lo, "n=%d i=%d starts right after the range before", n, i)
			}
			prevHi = hi
		}
		require.Equal(t, top, prevHi, "n=%d ends at the highest UUID", n)
	}
}
