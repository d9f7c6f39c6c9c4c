package api

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAppendJSONValueIsMarshal: decoded JSON is written byte for byte as
// json.Marshal writes it.
func TestAppendJSONValueIsMarshal(t *testing.T) {
	for _, text := range []string{
		`{"b":1,"a":[1,2.50,-3e7,true,false,null,"x"],"c":{"z":"","y":{}},"d":[]}`,
		`{"html":"<a href=\"x\">&amp;</a>","ctl":"tab\there\nnew\u0001","uni":"café \u2028 😀","bad":"\ud800"}`,
		`{"customer":{"email":"jane.doe@example.com","firstName":"Jane","lastName":"Doe","phone":"+1 555 0100"}}`,
		`[1,"two",{"3":[4]}]`, `"s"`, `12.0`, `null`,
	} {
		dec := json.NewDecoder(bytes.NewReader([]byte(text)))
		dec.UseNumber()
		var v any
		require.NoError(t, dec.Decode(&v), text)
		want, err := json.Marshal(v)
		require.NoError(t, err)
		got, err := appendJSONValue(nil, v)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), text)
		require.Equal(t, string(want), string(orderJSONOf(v)))
	}
	// Other values go to json.Marshal.
	got, err := appendJSONValue(nil, map[string]any{"n": 1.5, "s": []string{"a"}})
	require.NoError(t, err)
	require.Equal(t, `{"n":1.5,"s":["a"]}`, string(got))
}
