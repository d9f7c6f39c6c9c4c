// Package codectest holds the fixed, public payload key of the tests: the
// end-to-end tests record histories with it (FOS_UPDATE_HISTORY=1) and the
// replay tests decode them with it. Never use it outside tests.
package codectest

import (
	"go.temporal.io/sdk/converter"

	"github.com/fos-dev/fos/payloadcodec"
)

// KeyBase64 is the tests' payload key (32 bytes, base64).
const KeyBase64 = "Zm9zIHRlc3QgcGF5bG9hZCBrZXksIG5vdCBzZWNyZXQ="

// Codec returns the payload codec with the test key.
func Codec() *payloadcodec.Codec {
	k, err := payloadcodec.ParseKey(KeyBase64)
	if err != nil {
		panic(err)
	}
	return payloadcodec.New(k)
}

// DataConverter is the data converter of the tests' clients and replayers.
func DataConverter() converter.DataConverter { return Codec().DataConverter() }

// FailureConverter is the failure converter that goes with DataConverter.
func FailureConverter() converter.FailureConverter { return Codec().FailureConverter() }
