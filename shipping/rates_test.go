package shipping

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/store"
)

func TestOrderPackageWeights(t *testing.T) {
	pkg := func(items, meta string) (float64, error) {
		p, err := orderPackage(storeOrderForTest(items, meta))
		return p.Weight.Value, err
	}
	w, err := pkg(`[{"quantity": 2, "requiresShipping": true}]`, `{}`)
	require.NoError(t, err)
	require.Equal(t, 2.0, w, "1 lb per unit by default")
	w, _ = pkg(`[{"quantity": 4, "requiresShipping": true, "weight": 8, "weightUnit": "oz"}]`, `{}`)
	require.Equal(t, 2.0, w)
	w, _ = pkg(`[{"quantity": 1, "requiresShipping": true, "weight": 500, "weight_unit": "g"}]`, `{}`)
	require.Equal(t, 1.11, w, "rounded up to a hundredth")
	w, _ = pkg(`[{"quantity": 1, "requiresShipping": true, "weight": -1}]`, `{"weight": 7}`)
	require.Equal(t, 7.0, w, "metadata weight wins")
	w, _ = pkg(`[{"quantity": 1, "requiresShipping": true, "weight": "heavy"}]`, `{"weight": "x"}`)
	require.Equal(t, 1.0, w, "unreadable weights fall back to the default")
	_, err = pkg(`[{"quantity": 1, "requiresShipping": false}]`, `{}`)
	require.Error(t, err)
	_, err = pkg(`[{"quantity": 20000, "requiresShipping": true}]`, `{}`)
	require.Error(t, err)
}

func storeOrderForTest(items, meta string) store.Order {
	return store.Order{LineItems: json.RawMessage(items), Metadata: json.RawMessage(meta)}
}
