package oncemap_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/internal/oncemap"
)

// Concurrent Gets of a key share one computation; another key computes
// its own.
func TestMapComputesOncePerKey(t *testing.T) {
	var m oncemap.Map[string, int]
	var calls atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	got := make([]int, 16)
	for i := range got {
		wg.Go(func() {
			v, err := m.Get("a", func() (int, error) {
				calls.Add(1)
				<-release
				return 7, nil
			})
			require.NoError(t, err)
			got[i] = v
		})
	}
	close(release)
	wg.Wait()
	require.EqualValues(t, 1, calls.Load())
	for _, v := range got {
		require.Equal(t, 7, v)
	}
	v, err := m.Get("b", func() (int, error) { calls.Add(1); return 8, nil })
	require.NoError(t, err)
	require.Equal(t, 8, v)
	v, _ = m.Get("a", func() (int, error) { calls.Add(1); return 9, nil })
	require.Equal(t, 7, v)
	require.EqualValues(t, 2, calls.Load())
}

// A failure is answered to the Gets that waited for it and then
// forgotten, unless Keep keeps it.
func TestMapFailures(t *testing.T) {
	gone, flaky := errors.New("gone"), errors.New("flaky")
	m := oncemap.Map[int, string]{Keep: func(err error) bool { return errors.Is(err, gone) }}
	calls := 0
	fail := func(err error) func() (string, error) {
		return func() (string, error) { calls++; return "", err }
	}
	_, err := m.Get(1, fail(flaky))
	require.ErrorIs(t, err, flaky)
	v, err := m.Get(1, func() (string, error) { calls++; return "ok", nil })
	require.NoError(t, err)
	require.Equal(t, "ok", v)
	require.Equal(t, 2, calls, "the flaky failure was not kept")

	_, err = m.Get(2, fail(gone))
	require.ErrorIs(t, err, gone)
	_, err = m.Get(2, fail(flaky))
	require.ErrorIs(t, err, gone, "a kept failure is the answer")
	require.Equal(t, 3, calls)

	var none oncemap.Map[int, string] // no Keep: nothing failed is kept
	_, err = none.Get(1, fail(gone))
	require.ErrorIs(t, err, gone)
	_, err = none.Get(1, fail(flaky))
	require.ErrorIs(t, err, flaky)
}
