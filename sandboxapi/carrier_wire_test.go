package sandboxapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/internal/vendortest"
)

// The vendor examples live above the checkout (shared/vendors; vendortest.Dir).

func vendorExample(t *testing.T, carrier, name string) []byte {
	t.Helper()
	return vendortest.Example(t, "carriers", carrier, name)
}

// skipWithoutVendor fails the test, naming where it looked, when the
// vendors' examples are missing (it never skips: the name stays for its
// callers).
func skipWithoutVendor(t *testing.T) {
	t.Helper()
	vendortest.Dir(t, "carriers")
}

type carrierCall struct {
	method, path string
	header       map[string]string
	body         []byte
	form         url.Values
	basic        []string
}

func carrierDo(t *testing.T, srv *httptest.Server, c carrierCall) (int, []byte) {
	t.Helper()
	var body io.Reader
	if c.body != nil {
		body = bytes.NewReader(c.body)
	}
	if c.form != nil {
		body = strings.NewReader(c.form.Encode())
	}
	req, err := http.NewRequest(c.method, srv.URL+c.path, body)
	require.NoError(t, err)
	if c.form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else if c.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	if c.basic != nil {
		req.SetBasicAuth(c.basic[0], c.basic[1])
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, raw
}

// shape collects the key paths of a JSON document (array levels are
// transparent) and the paths holding empty arrays.
func shape(t *testing.T, raw []byte) (paths, emptyArrays map[string]bool) {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(raw, &v), string(raw))
	paths, emptyArrays = map[string]bool{}, map[string]bool{}
	var walk func(string, any)
	walk = func(p string, x any) {
		switch t := x.(type) {
		case map[string]any:
			for k, val := range t {
				q := k
				if p != "" {
					q = p + "." + k
				}
				paths[q] = true
				walk(q, val)
			}
		case []any:
			if len(t) == 0 {
				emptyArrays[p] = true
			}
			for _, e := range t {
				walk(p, e)
			}
		}
	}
	walk("", v)
	return paths, emptyArrays
}

// requireShape asserts that got has every key path of the vendor example,
// except the ignored ones (and their children) and those under an array
// that is empty in got.
func requireShape(t *testing.T, example, got []byte, ignore ...string) {
	t.Helper()
	want, _ := shape(t, example)
	have, empty := shape(t, got)
	var missing []string
next:
	for p := range want {
		if have[p] {
			continue
		}
		for _, ig := range ignore {
			if p == ig || strings.HasPrefix(p, ig+".") {
				continue next
			}
		}
		for e := range empty {
			if strings.HasPrefix(p, e+".") {
				continue next
			}
		}
		missing = append(missing, p)
	}
	sort.Strings(missing)
	assert.Empty(t, missing, "fields of the vendor example missing from the sandbox answer:\n%s", got)
}

// requirePaths asserts that both the example and the answer have the paths.
func requirePaths(t *testing.T, example, got []byte, paths ...string) {
	t.Helper()
	want, _ := shape(t, example)
	have, _ := shape(t, got)
	for _, p := range paths {
		assert.True(t, want[p], "example has %s", p)
		assert.True(t, have[p], "sandbox answer has %s", p)
	}
}

func jsonPath(t *testing.T, raw []byte, path ...any) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(raw, &v))
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			require.True(t, ok, "%v is not an object at %q", v, k)
			v = m[k]
		case int:
			a, ok := v.([]any)
			require.True(t, ok, "%v is not an array at %d", v, k)
			require.Greater(t, len(a), k)
			v = a[k]
		}
	}
	return v
}

func newCarrierServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(NewHandler())
	t.Cleanup(srv.Close)
	return srv
}

// ---- carrier_a ----

func faTestToken(t *testing.T, srv *httptest.Server, extra map[string]string) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {"Your_client_ID"}, "client_secret": {"Your_secret"}}
	status, body := carrierDo(t, srv, carrierCall{method: http.MethodPost, path: "/carriers/carrier_a/oauth/token", form: form, header: extra})
	require.Equal(t, http.StatusOK, status, string(body))
	return jsonPath(t, body, "access_token").(string)
}

func faPost(t *testing.T, srv *httptest.Server, tok, method, path string, body []byte, extra map[string]string) (int, []byte) {
	t.Helper()
	h := map[string]string{"Authorization": "Bearer " + tok, "x-customer-transaction-id": "AnyCo_order123456789"}
	for k, v := range extra {
		h[k] = v
	}
	return carrierDo(t, srv, carrierCall{method: method, path: "/carriers/carrier_a" + path, body: body, header: h})
}

func TestCarrierAOAuthWire(t *testing.T) {
	skipWithoutVendor(t)
	srv := newCarrierServer(t)
	form := url.Values{"grant_type": {"csp_credentials"}, "client_id": {"Client_ID"}, "client_secret": {"Client_secret"},
		"child_Key": {"Child_key"}, "child_secret": {"Child_Secret"}}
	status, body := carrierDo(t, srv, carrierCall{method: http.MethodPost, path: "/carriers/carrier_a/oauth/token", form: form})
	require.Equal(t, http.StatusOK, status)
	requireShape(t, vendorExample(t, "carrier_a", "oauth-token-response.json"), body)
	assert.Equal(t, 3600.0, jsonPath(t, body, "expires_in"))
	assert.Equal(t, "bearer", jsonPath(t, body, "token_type"))

	form.Set("child_secret", FailValue)
	status, body = carrierDo(t, srv, carrierCall{method: http.MethodPost, path: "/carriers/carrier_a/oauth/token", form: form})
	assert.Equal(t, http.StatusUnauthorized, status)
	requireShape(t, vendorExample(t, "carrier_a", "oauth-token-error-401.json"), body)
	assert.Equal(t, "NOT.AUTHORIZED.ERROR", jsonPath(t, body, "errors", 0, "code"))

	// Calls without a valid token get the 401 body.
	status, body = faPost(t, srv, "nope", http.MethodPost, "/rate/v1/rates/quotes", vendorExample(t, "carrier_a", "rate-request.json"), nil)
	assert.Equal(t, http.StatusUnauthorized, status)
	requireShape(t, vendorExample(t, "carrier_a", "error-401.json"), body)
}

func TestCarrierARateWire(t *testing.T) {
	srv := newCarrierServer(t)
	tok := faTestToken(t, srv, nil)
	example := vendorExample(t, "carrier_a", "rate-response.json")

	status, body := faPost(t, srv, tok, http.MethodPost, "/rate/v1/rates/quotes", vendorExample(t, "carrier_a", "rate-request.json"), nil)
	require.Equal(t, http.StatusOK, status, string(body))
	requirePaths(t, example, body,
		"transactionId", "customerTransactionId", "output.quoteDate", "output.alerts",
		"output.rateReplyDetails.serviceType", "output.rateReplyDetails.serviceName", "output.rateReplyDetails.packagingType",
		"output.rateReplyDetails.ratedShipmentDetails.rateType", "output.rateReplyDetails.ratedShipmentDetails.ratedWeightMethod",
		"output.rateReplyDetails.ratedShipmentDetails.totalDiscounts", "output.rateReplyDetails.ratedShipmentDetails.totalBaseCharge",
		"output.rateReplyDetails.ratedShipmentDetails.totalNetCharge", "output.rateReplyDetails.ratedShipmentDetails.totalNetFedExCharge",
		"output.rateReplyDetails.ratedShipmentDetails.currency",
		"output.rateReplyDetails.ratedShipmentDetails.shipmentRateDetail.rateZone",
		"output.rateReplyDetails.ratedShipmentDetails.shipmentRateDetail.dimDivisor",
		"output.rateReplyDetails.ratedShipmentDetails.shipmentRateDetail.fuelSurchargePercent",
		"output.rateReplyDetails.ratedShipmentDetails.shipmentRateDetail.totalSurcharges",
		"output.rateReplyDetails.ratedShipmentDetails.shipmentRateDetail.surCharges.type",
		"output.rateReplyDetails.ratedShipmentDetails.shipmentRateDetail.surCharges.description",
		"output.rateReplyDetails.ratedShipmentDetails.shipmentRateDetail.surCharges.amount",
		"output.rateReplyDetails.ratedShipmentDetails.shipmentRateDetail.totalBillingWeight.units",
		"output.rateReplyDetails.ratedShipmentDetails.shipmentRateDetail.totalBillingWeight.value",
		"output.rateReplyDetails.ratedShipmentDetails.shipmentRateDetail.currency",
		"output.rateReplyDetails.operationalDetail.transitTime", "output.rateReplyDetails.operationalDetail.deliveryDay",
		"output.rateReplyDetails.operationalDetail.commitDate", "output.rateReplyDetails.operationalDetail.deliveryDate",
		"output.rateReplyDetails.operationalDetail.ineligibleForMoneyBackGuarantee",
		"output.rateReplyDetails.operationalDetail.publishedDeliveryTime",
		"output.rateReplyDetails.serviceDescription.serviceType", "output.rateReplyDetails.serviceDescription.code",
		"output.rateReplyDetails.serviceDescription.names.value", "output.rateReplyDetails.serviceDescription.description",
		"output.rateReplyDetails.commit.dateDetail.dayOfWeek", "output.rateReplyDetails.commit.dateDetail.dayCxsFormat",
	)
	details := jsonPath(t, body, "output", "rateReplyDetails").([]any)
	assert.Len(t, details, 6, "every domestic service")
	// 65247 → 75063: zip3 652 vs 750 → zone 2 + 98*7/1000 = 2.
	assert.Equal(t, "2", jsonPath(t, body, "output", "rateReplyDetails", 0, "ratedShipmentDetails", 0, "shipmentRateDetail", "rateZone"))

	// Same request, same answer.
	_, again := faPost(t, srv, tok, http.MethodPost, "/rate/v1/rates/quotes", vendorExample(t, "carrier_a", "rate-request.json"), nil)
	assert.JSONEq(t, string(body), string(again))

	status, body = faPost(t, srv, tok, http.MethodPost, "/rate/v1/rates/quotes", vendorExample(t, "carrier_a", "rate-request.service.json"), nil)
	require.Equal(t, http.StatusOK, status, string(body))
	details = jsonPath(t, body, "output", "rateReplyDetails").([]any)
	require.Len(t, details, 1)
	assert.Equal(t, "PRIORITY_OVERNIGHT", jsonPath(t, body, "output", "rateReplyDetails", 0, "serviceType"))

	// A refused request has the error envelope of rate-error-400.json.
	status, body = faPost(t, srv, tok, http.MethodPost, "/rate/v1/rates/quotes", []byte(`{"accountNumber":{"value":"1"},"requestedShipment":{}}`), nil)
	assert.Equal(t, http.StatusBadRequest, status)
	requireShape(t, vendorExample(t, "carrier_a", "rate-error-400.json"), body)
}

func TestCarrierAShipCancelWire(t *testing.T) {
	srv := newCarrierServer(t)
	tok := faTestToken(t, srv, nil)

	// ship-request.label-pdf.json (ship date 2022: delivered long ago).
	status, body := faPost(t, srv, tok, http.MethodPost, "/ship/v1/shipments", vendorExample(t, "carrier_a", "ship-request.label-pdf.json"), nil)
	require.Equal(t, http.StatusOK, status, string(body))
	requirePaths(t, vendorExample(t, "carrier_a", "ship-response.captured.json"), body,
		"transactionId", "output.transactionShipments.masterTrackingNumber", "output.transactionShipments.serviceType",
		"output.transactionShipments.shipDatestamp", "output.transactionShipments.serviceName",
		"output.transactionShipments.pieceResponses.trackingNumber", "output.transactionShipments.pieceResponses.masterTrackingNumber",
		"output.transactionShipments.pieceResponses.netRateAmount", "output.transactionShipments.pieceResponses.netChargeAmount",
		"output.transactionShipments.pieceResponses.baseRateAmount", "output.transactionShipments.pieceResponses.currency",
		"output.transactionShipments.pieceResponses.packageDocuments.contentType", "output.transactionShipments.pieceResponses.packageDocuments.docType",
		"output.transactionShipments.pieceResponses.packageDocuments.encodedLabel", "output.transactionShipments.pieceResponses.packageDocuments.copiesToPrint",
		"output.transactionShipments.completedShipmentDetail.masterTrackingId.trackingNumber",
		"output.transactionShipments.completedShipmentDetail.carrierCode",
		"output.transactionShipments.completedShipmentDetail.shipmentRating.actualRateType",
		"output.transactionShipments.completedShipmentDetail.shipmentRating.shipmentRateDetails.rateType",
		"output.transactionShipments.completedShipmentDetail.shipmentRating.shipmentRateDetails.rateZone",
		"output.transactionShipments.completedShipmentDetail.shipmentRating.shipmentRateDetails.totalNetCharge",
		"output.transactionShipments.completedShipmentDetail.shipmentRating.shipmentRateDetails.surcharges.surchargeType",
		"output.transactionShipments.completedShipmentDetail.shipmentRating.shipmentRateDetails.currency",
		"output.transactionShipments.completedShipmentDetail.completedPackageDetails.trackingIds.trackingNumber",
	)
	label := jsonPath(t, body, "output", "transactionShipments", 0, "pieceResponses", 0, "packageDocuments", 0, "encodedLabel").(string)
	pdf, err := base64.StdEncoding.DecodeString(label)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(pdf, []byte("%PDF-")))
	tn := jsonPath(t, body, "output", "transactionShipments", 0, "masterTrackingNumber").(string)
	assert.Contains(t, string(pdf), "PITTSBURGH PA 15220")

	// It was tendered in 2022: it cannot be cancelled.
	cancel := []byte(`{"accountNumber":{"value":"740561073"},"trackingNumber":"` + tn + `"}`)
	status, body = faPost(t, srv, tok, http.MethodPut, "/ship/v1/shipments/cancel", cancel, nil)
	assert.Equal(t, http.StatusBadRequest, status)
	requireShape(t, vendorExample(t, "carrier_a", "cancel-shipment-error-400.json"), body)

	// ship-request.json asks for URL_ONLY: the url serves the document.
	future := strings.Replace(string(vendorExample(t, "carrier_a", "ship-request.json")), "2020-07-03", time.Now().UTC().AddDate(0, 0, 3).Format("2006-01-02"), 1)
	status, body = faPost(t, srv, tok, http.MethodPost, "/ship/v1/shipments", []byte(future), nil)
	require.Equal(t, http.StatusOK, status, string(body))
	docURL := jsonPath(t, body, "output", "transactionShipments", 0, "pieceResponses", 0, "packageDocuments", 0, "url").(string)
	resp, err := srv.Client().Get(docURL)
	require.NoError(t, err)
	doc, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, "application/pdf", resp.Header.Get("Content-Type"))
	assert.True(t, bytes.HasPrefix(doc, []byte("%PDF-")))

	tn = jsonPath(t, body, "output", "transactionShipments", 0, "masterTrackingNumber").(string)
	cancel = []byte(strings.Replace(string(vendorExample(t, "carrier_a", "cancel-shipment-request.json")), "794842623031", tn, 1))
	status, body = faPost(t, srv, tok, http.MethodPut, "/ship/v1/shipments/cancel", cancel, nil)
	require.Equal(t, http.StatusOK, status, string(body))
	requireShape(t, vendorExample(t, "carrier_a", "cancel-shipment-response.json"), body)
	assert.Equal(t, true, jsonPath(t, body, "output", "cancelledShipment"))
}

func TestCarrierATrackWire(t *testing.T) {
	srv := newCarrierServer(t)
	tok := faTestToken(t, srv, nil)
	status, body := faPost(t, srv, tok, http.MethodPost, "/track/v1/trackingnumbers", vendorExample(t, "carrier_a", "track-request.json"), nil)
	require.Equal(t, http.StatusOK, status, string(body))
	requireShape(t, vendorExample(t, "carrier_a", "track-response.json"), body,
		// Parts of the schema sample the sandbox does not imitate.
		"output.completeTrackResults.trackResults.additionalTrackingInfo.nickname",
		"output.completeTrackResults.trackResults.additionalTrackingInfo.shipmentNotes",
		"output.completeTrackResults.trackResults.latestStatusDetail.ancillaryDetails",
		"output.completeTrackResults.trackResults.latestStatusDetail.delayDetail",
		"output.completeTrackResults.trackResults.latestStatusDetail.scanLocation.streetLines",
		"output.completeTrackResults.trackResults.latestStatusDetail.scanLocation.addressClassification",
		"output.completeTrackResults.trackResults.latestStatusDetail.scanLocation.urbanizationCode",
		"output.completeTrackResults.trackResults.scanEvents.scanLocation.streetLines",
		"output.completeTrackResults.trackResults.scanEvents.scanLocation.addressClassification",
		"output.completeTrackResults.trackResults.scanEvents.scanLocation.urbanizationCode",
		"output.completeTrackResults.trackResults.scanEvents.locationId",
		"output.completeTrackResults.trackResults.scanEvents.delayDetail",
		"output.completeTrackResults.trackResults.estimatedDeliveryTimeWindow",
		"output.completeTrackResults.trackResults.standardTransitTimeWindow",
		"output.completeTrackResults.trackResults.packageDetails.physicalPackagingType",
		"output.completeTrackResults.trackResults.packageDetails.sequenceNumber",
		"output.completeTrackResults.trackResults.packageDetails.undeliveredCount",
		"output.completeTrackResults.trackResults.packageDetails.weightAndDimensions.dimensions",
		"output.completeTrackResults.trackResults.packageDetails.packageContent",
		"output.completeTrackResults.trackResults.packageDetails.contentPieceCount",
		"output.completeTrackResults.trackResults.packageDetails.declaredValue",
		"output.completeTrackResults.trackResults.shipperInformation.contact",
		"output.completeTrackResults.trackResults.shipperInformation.address.streetLines",
		"output.completeTrackResults.trackResults.shipperInformation.address.addressClassification",
		"output.completeTrackResults.trackResults.shipperInformation.address.urbanizationCode",
		"output.completeTrackResults.trackResults.recipientInformation.contact",
		"output.completeTrackResults.trackResults.recipientInformation.address.streetLines",
		"output.completeTrackResults.trackResults.recipientInformation.address.addressClassification",
		"output.completeTrackResults.trackResults.recipientInformation.address.urbanizationCode",
		"output.completeTrackResults.trackResults.originLocation",
		"output.completeTrackResults.trackResults.destinationLocation",
		"output.completeTrackResults.trackResults.deliveryDetails.receivedByName",
		"output.completeTrackResults.trackResults.deliveryDetails.destinationServiceArea",
		"output.completeTrackResults.trackResults.deliveryDetails.destinationServiceAreaDescription",
		"output.completeTrackResults.trackResults.deliveryDetails.locationDescription",
		"output.completeTrackResults.trackResults.deliveryDetails.actualDeliveryAddress",
		"output.completeTrackResults.trackResults.deliveryDetails.deliveryToday",
		"output.completeTrackResults.trackResults.deliveryDetails.locationType",
		"output.completeTrackResults.trackResults.deliveryDetails.signedByName",
		"output.completeTrackResults.trackResults.deliveryDetails.officeOrderDeliveryMethod",
		"output.completeTrackResults.trackResults.error",
	)
	assert.Equal(t, "DL", jsonPath(t, body, "output", "completeTrackResults", 0, "trackResults", 0, "latestStatusDetail", "code"))

	notFound := []byte(`{"trackingInfo":[{"trackingNumberInfo":{"trackingNumber":"39936860000"}}],"includeDetailedScans":true}`)
	status, body = faPost(t, srv, tok, http.MethodPost, "/track/v1/trackingnumbers", notFound, nil)
	require.Equal(t, http.StatusOK, status)
	requireShape(t, vendorExample(t, "carrier_a", "track-response.not-found.json"), body)
	assert.Equal(t, "TRACKING.TRACKINGNUMBER.NOTFOUND", jsonPath(t, body, "output", "completeTrackResults", 0, "trackResults", 0, "error", "code"))

	status, body = faPost(t, srv, tok, http.MethodPost, "/track/v1/trackingnumbers", []byte(`{"trackingInfo":[],"includeDetailedScans":true}`), nil)
	assert.Equal(t, http.StatusBadRequest, status)
	requireShape(t, vendorExample(t, "carrier_a", "track-error-400.json"), body)
	assert.Equal(t, "TRACKING.TRACKINGNUMBER.EMPTY", jsonPath(t, body, "errors", 0, "code"))
}

func TestCarrierAPickupWire(t *testing.T) {
	srv := newCarrierServer(t)
	tok := faTestToken(t, srv, nil)
	tomorrow := time.Now().UTC().AddDate(0, 0, 1).Format("2006-01-02")
	for _, name := range []string{"pickup-create-request.json", "pickup-create-request.ground.json"} {
		req := vendorExample(t, "carrier_a", name)
		// The examples are for 2020: a previous day.
		status, body := faPost(t, srv, tok, http.MethodPost, "/pickup/v1/pickups", req, nil)
		assert.Equal(t, http.StatusBadRequest, status)
		requireShape(t, vendorExample(t, "carrier_a", "pickup-create-error-400.json"), body)
		assert.Equal(t, "PICKUP.REQUESTED.PREVIOUS.DAY", jsonPath(t, body, "errors", 0, "code"))

		status, body = faPost(t, srv, tok, http.MethodPost, "/pickup/v1/pickups", bytes.ReplaceAll(req, []byte("2020-07-03"), []byte(tomorrow)), nil)
		require.Equal(t, http.StatusOK, status, string(body))
		requireShape(t, vendorExample(t, "carrier_a", "pickup-create-response.json"), body)
	}

	for _, name := range []string{"pickup-cancel-request.json", "pickup-cancel-request.ground.json"} {
		req := vendorExample(t, "carrier_a", name)
		status, body := faPost(t, srv, tok, http.MethodPut, "/pickup/v1/pickups/cancel", req, nil)
		assert.Equal(t, http.StatusBadRequest, status)
		requireShape(t, vendorExample(t, "carrier_a", "pickup-cancel-error-400.json"), body)
		assert.Equal(t, "PICKUP.NUMBER.EXPIRED", jsonPath(t, body, "errors", 0, "code"))

		status, body = faPost(t, srv, tok, http.MethodPut, "/pickup/v1/pickups/cancel", bytes.ReplaceAll(req, []byte("2020-07-03"), []byte(tomorrow)), nil)
		require.Equal(t, http.StatusOK, status, string(body))
		requireShape(t, vendorExample(t, "carrier_a", "pickup-cancel-response.json"), body)
	}
}

func TestCarrierARegistrationWire(t *testing.T) {
	srv := newCarrierServer(t)
	tok := faTestToken(t, srv, nil)
	req := vendorExample(t, "carrier_a", "registration-address-keysgeneration-request.json")

	status, body := faPost(t, srv, tok, http.MethodPost, "/registration/v2/address/keysgeneration", req, nil)
	require.Equal(t, http.StatusOK, status, string(body))
	requireShape(t, vendorExample(t, "carrier_a", "registration-address-keysgeneration-response.mfa.json"), body)
	authToken := jsonPath(t, body, "output", "mfaOptions", "accountAuthToken").(string)
	assert.Equal(t, "***-***-4221", jsonPath(t, body, "output", "mfaOptions", "phoneNumber"))

	status, body = faPost(t, srv, tok, http.MethodPost, "/registration/v2/address/keysgeneration", req, map[string]string{HeaderSandboxEnv: "test"})
	require.Equal(t, http.StatusOK, status)
	requireShape(t, vendorExample(t, "carrier_a", "registration-address-keysgeneration-response.keys.json"), body)

	unknown := bytes.Replace(req, []byte("451134221"), []byte("051134221"), 1)
	status, body = faPost(t, srv, tok, http.MethodPost, "/registration/v2/address/keysgeneration", unknown, nil)
	assert.Equal(t, http.StatusBadRequest, status)
	want := vendorExample(t, "carrier_a", "registration-address-keysgeneration-error-400.account-not-found.json")
	requireShape(t, want, body)
	// The vendor's message, with a neutral word where it names itself.
	vendorMsg, _ := jsonPath(t, want, "errors", 0, "message").(string)
	gotMsg, _ := jsonPath(t, body, "errors", 0, "message").(string)
	first, _, _ := strings.Cut(vendorMsg, "  If you continue")
	assert.True(t, strings.HasPrefix(gotMsg, first+"  "), "%q", gotMsg)
	assert.Contains(t, gotMsg, "Carrier A customer service")

	session := map[string]string{"accountAuthToken": authToken}
	status, body = faPost(t, srv, tok, http.MethodPost, "/registration/v2/customerkeys/pingeneration", vendorExample(t, "carrier_a", "registration-pingeneration-request.json"), session)
	require.Equal(t, http.StatusOK, status, string(body))
	requireShape(t, vendorExample(t, "carrier_a", "registration-pingeneration-response.json"), body)
	status, body = faPost(t, srv, tok, http.MethodPost, "/registration/v2/customerkeys/pingeneration", []byte(`{"locale":"en_US"}`), session)
	assert.Equal(t, http.StatusBadRequest, status)
	requireShape(t, vendorExample(t, "carrier_a", "registration-pingeneration-error-400.json"), body)
	status, _ = faPost(t, srv, tok, http.MethodPost, "/registration/v2/customerkeys/pingeneration", vendorExample(t, "carrier_a", "registration-pingeneration-request.json"), nil)
	assert.Equal(t, http.StatusBadRequest, status, "no accountAuthToken")

	status, body = faPost(t, srv, tok, http.MethodPost, "/registration/v2/pin/keysgeneration", vendorExample(t, "carrier_a", "registration-pin-keysgeneration-request.json"), session)
	require.Equal(t, http.StatusOK, status, string(body))
	requireShape(t, vendorExample(t, "carrier_a", "registration-pin-keysgeneration-response.json"), body)
	status, body = faPost(t, srv, tok, http.MethodPost, "/registration/v2/pin/keysgeneration", []byte(`{"secureCodePin":"000000"}`), session)
	assert.Equal(t, http.StatusBadRequest, status)
	requireShape(t, vendorExample(t, "carrier_a", "registration-pin-keysgeneration-error-400.json"), body)
	assert.Equal(t, "PIN.OPTION.INVALIDEXPIRED", jsonPath(t, body, "errors", 0, "code"))

	status, body = faPost(t, srv, tok, http.MethodPost, "/registration/v2/invoice/keysgeneration", vendorExample(t, "carrier_a", "registration-invoice-keysgeneration-request.json"), session)
	require.Equal(t, http.StatusOK, status, string(body))
	requireShape(t, vendorExample(t, "carrier_a", "registration-invoice-keysgeneration-response.json"), body)
	status, body = faPost(t, srv, tok, http.MethodPost, "/registration/v2/invoice/keysgeneration",
		[]byte(`{"invoiceDetail":{"number":0,"currency":"USD","date":"2022-10-09","amount":1}}`), session)
	assert.Equal(t, http.StatusNotFound, status)
	requireShape(t, vendorExample(t, "carrier_a", "registration-invoice-keysgeneration-error-404.json"), body)
	assert.Equal(t, "INVOICEDETAILS.NUMBER.NOTEXIST", jsonPath(t, body, "errors", 0, "code"))
}

// ---- carrier_b ----

func ubTestToken(t *testing.T, srv *httptest.Server, merchant string) string {
	t.Helper()
	status, body := carrierDo(t, srv, carrierCall{method: http.MethodPost, path: "/carriers/carrier_b/security/v1/oauth/token",
		form: url.Values{"grant_type": {"client_credentials"}}, basic: []string{"client_id", "secret"}, header: map[string]string{"x-merchant-id": merchant}})
	require.Equal(t, http.StatusOK, status, string(body))
	return jsonPath(t, body, "access_token").(string)
}

func ubCall(t *testing.T, srv *httptest.Server, tok, method, path string, body []byte) (int, []byte) {
	t.Helper()
	return carrierDo(t, srv, carrierCall{method: method, path: "/carriers/carrier_b" + path, body: body,
		header: map[string]string{"Authorization": "Bearer " + tok, "transId": "0123456789abcdef0123456789abcdef", "transactionSrc": "testing"}})
}

func TestCarrierBOAuthWire(t *testing.T) {
	srv := newCarrierServer(t)
	status, body := carrierDo(t, srv, carrierCall{method: http.MethodPost, path: "/carriers/carrier_b/security/v1/oauth/token",
		form: url.Values{"grant_type": {"client_credentials"}}, basic: []string{"client_id", "secret"}})
	require.Equal(t, http.StatusOK, status)
	requireShape(t, vendorExample(t, "carrier_b", "oauth-token-response.json"), body)
	assert.Equal(t, "14399", jsonPath(t, body, "expires_in"), "UPS sends strings")

	status, body = carrierDo(t, srv, carrierCall{method: http.MethodPost, path: "/carriers/carrier_b/security/v1/oauth/token",
		form: url.Values{"grant_type": {"client_credentials"}}, basic: []string{"client_id", FailValue}})
	assert.Equal(t, http.StatusUnauthorized, status)
	requireShape(t, vendorExample(t, "carrier_b", "error-401.json"), body)

	status, body = ubCall(t, srv, "expired", http.MethodPost, "/api/rating/v2409/Rate", vendorExample(t, "carrier_b", "rate-request.json"))
	assert.Equal(t, http.StatusUnauthorized, status)
	requireShape(t, vendorExample(t, "carrier_b", "error-401.json"), body)
	assert.Equal(t, "250002", jsonPath(t, body, "response", "errors", 0, "code"))
}

func TestCarrierBRateWire(t *testing.T) {
	srv := newCarrierServer(t)
	tok := ubTestToken(t, srv, "A1B2C3")

	status, body := ubCall(t, srv, tok, http.MethodPost, "/api/rating/v2409/Rate", vendorExample(t, "carrier_b", "rate-request.json"))
	require.Equal(t, http.StatusOK, status, string(body))
	requireShape(t, vendorExample(t, "carrier_b", "rate-response.json"), body)
	assert.Len(t, jsonPath(t, body, "RateResponse", "RatedShipment").([]any), 1, "v2409: always an array")

	status, body = ubCall(t, srv, tok, http.MethodPost, "/api/rating/v2409/Shop", vendorExample(t, "carrier_b", "rate-request.published.json"))
	require.Equal(t, http.StatusOK, status, string(body))
	requireShape(t, vendorExample(t, "carrier_b", "rate-response.shop.json"), body)
	assert.Len(t, jsonPath(t, body, "RateResponse", "RatedShipment").([]any), 7)

	status, body = ubCall(t, srv, tok, http.MethodPost, "/api/rating/v2409/Rate", vendorExample(t, "carrier_b", "rate-request.negotiated.json"))
	require.Equal(t, http.StatusOK, status, string(body))
	assert.NotNil(t, jsonPath(t, body, "RateResponse", "RatedShipment", 0, "NegotiatedRateCharges", "TotalCharge", "MonetaryValue"))
	codes := []string{}
	for _, it := range jsonPath(t, body, "RateResponse", "RatedShipment", 0, "RatedPackage", 0, "ItemizedCharges").([]any) {
		codes = append(codes, it.(map[string]any)["Code"].(string))
	}
	assert.Contains(t, codes, "270", "residential surcharge (ResidentialAddressIndicator)")

	// Rate without a service is the error envelope of error-400.json.
	status, body = ubCall(t, srv, tok, http.MethodPost, "/api/rating/v2409/Rate", []byte(`{"RateRequest":{"Shipment":{"Shipper":{"Address":{"PostalCode":"21093","CountryCode":"US"}},"ShipTo":{"Address":{"PostalCode":"30005","CountryCode":"US"}},"Package":{"PackageWeight":{"UnitOfMeasurement":{"Code":"LBS"},"Weight":"1"}}}}}`))
	assert.Equal(t, http.StatusBadRequest, status)
	requireShape(t, vendorExample(t, "carrier_b", "error-400.json"), body)

	// A merchant id of sandbox-fail: the account's calls fail with 503.
	failTok := ubTestToken(t, srv, FailValue)
	status, _ = ubCall(t, srv, failTok, http.MethodPost, "/api/rating/v2409/Rate", vendorExample(t, "carrier_b", "rate-request.json"))
	assert.Equal(t, http.StatusServiceUnavailable, status)
}

func TestCarrierBShipVoidTrackWire(t *testing.T) {
	srv := newCarrierServer(t)
	tok := ubTestToken(t, srv, "A1B2C3")
	// Shipped tomorrow, so it can still be voided.
	tomorrow := time.Now().UTC().AddDate(0, 0, 1).Format("20060102")
	req := bytes.Replace(vendorExample(t, "carrier_b", "ship-request.json"), []byte(`"Description": "Ship WS test",`),
		[]byte(`"Description": "Ship WS test", "ShipmentDate": "`+tomorrow+`",`), 1)
	status, body := ubCall(t, srv, tok, http.MethodPost, "/api/shipments/v2409/ship", req)
	require.Equal(t, http.StatusOK, status, string(body))
	requireShape(t, vendorExample(t, "carrier_b", "ship-response.json"), body,
		"ShipmentResponse.ShipmentResults.NegotiatedRateCharges") // only when NegotiatedRatesIndicator is sent
	img := jsonPath(t, body, "ShipmentResponse", "ShipmentResults", "PackageResults", 0, "ShippingLabel", "GraphicImage").(string)
	gifData, err := base64.StdEncoding.DecodeString(img)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(gifData, []byte("GIF8")))
	_, err = decodeGIF(gifData)
	require.NoError(t, err)
	tn := jsonPath(t, body, "ShipmentResponse", "ShipmentResults", "ShipmentIdentificationNumber").(string)
	assert.Regexp(t, `^1Z[0-9A-Z]{16}$`, tn)

	status, body = ubCall(t, srv, tok, http.MethodDelete, "/api/shipments/v2409/void/cancel/"+tn, nil)
	require.Equal(t, http.StatusOK, status, string(body))
	requireShape(t, vendorExample(t, "carrier_b", "void-response.json"), body)

	status, body = ubCall(t, srv, tok, http.MethodGet, "/api/track/v1/details/1Z1442YY7229014688?locale=en_US", nil)
	require.Equal(t, http.StatusOK, status, string(body))
	requireShape(t, vendorExample(t, "carrier_b", "track-response.json"), body,
		"trackResponse.shipment.package.accessPointInformation",
		"trackResponse.shipment.package.additionalAttributes",
		"trackResponse.shipment.package.additionalServices",
		"trackResponse.shipment.package.alternateTrackingNumber",
		"trackResponse.shipment.package.deliveryInformation",
		"trackResponse.shipment.package.milestones",
		"trackResponse.shipment.package.paymentInformation",
		"trackResponse.shipment.package.statusCode",
		"trackResponse.shipment.package.statusDescription",
		"trackResponse.shipment.package.suppressionIndicators",
		"trackResponse.shipment.userRelation",
		"trackResponse.shipment.warnings",
	)
	assert.Equal(t, "D", jsonPath(t, body, "trackResponse", "shipment", 0, "package", 0, "currentStatus", "type"))

	status, body = ubCall(t, srv, tok, http.MethodGet, "/api/track/v1/details/1Z1442YY7229010000", nil)
	require.Equal(t, http.StatusOK, status)
	requireShape(t, vendorExample(t, "carrier_b", "track-response.not-found.json"), body)

	status, _ = carrierDo(t, srv, carrierCall{method: http.MethodGet, path: "/carriers/carrier_b/api/track/v1/details/1Z1442YY7229014688",
		header: map[string]string{"Authorization": "Bearer " + tok}})
	assert.Equal(t, http.StatusBadRequest, status, "transId and transactionSrc are required")
}

// ---- carrier_c ----

func TestCarrierCWire(t *testing.T) {
	srv := newCarrierServer(t)
	key := map[string]string{"api-key": "TEST_abc"}
	status, body := carrierDo(t, srv, carrierCall{method: http.MethodGet, path: "/carriers/carrier_c/v1/carriers", header: key})
	require.Equal(t, http.StatusOK, status, string(body))
	id := jsonPath(t, body, "carriers", 0, "carrier_id").(string)
	assert.Regexp(t, `^se-\d{7}$`, id)

	est := []byte(`{"carrier_ids":["` + id + `"],"from_country_code":"US","from_postal_code":"78756","from_city_locality":"Austin","from_state_province":"TX","to_country_code":"US",
		"to_postal_code":"95128","to_city_locality":"San Jose","to_state_province":"CA","weight":{"value":1.0,"unit":"ounce"},
		"dimensions":{"unit":"inch","length":5.0,"width":5.0,"height":5.0},"confirmation":"none","address_residential_indicator":"no",
		"ship_date":"2026-01-05T00:00:00Z"}`)
	status, body = carrierDo(t, srv, carrierCall{method: http.MethodPost, path: "/carriers/carrier_c/v1/rates/estimate", header: key, body: est})
	require.Equal(t, http.StatusOK, status, string(body))
	rates := jsonPath(t, body).([]any)
	require.Len(t, rates, 3)
	// The rate fields of the vendor's rate schema (carrier_c/README.md, "Alternative").
	for _, f := range []string{"rate_id", "rate_type", "carrier_id", "shipping_amount", "insurance_amount", "confirmation_amount",
		"other_amount", "zone", "package_type", "delivery_days", "guaranteed_service", "estimated_delivery_date",
		"carrier_delivery_days", "ship_date", "negotiated_rate", "service_type", "service_code", "trackable", "carrier_code",
		"carrier_friendly_name", "validation_status", "warning_messages", "error_messages"} {
		assert.Contains(t, rates[0].(map[string]any), f)
	}
	assert.Equal(t, "2026-01-07T00:00:00Z", jsonPath(t, body, 0, "estimated_delivery_date"), "ground advantage, zone 3: 2 business days")

	_, again := carrierDo(t, srv, carrierCall{method: http.MethodPost, path: "/carriers/carrier_c/v1/rates/estimate", header: key, body: est})
	assert.JSONEq(t, string(body), string(again))

	status, body = carrierDo(t, srv, carrierCall{method: http.MethodPost, path: "/carriers/carrier_c/v1/rates/estimate",
		header: map[string]string{"api-key": "TEST_other"}, body: est})
	assert.Equal(t, http.StatusBadRequest, status, "another key's carrier id")
	assert.Equal(t, "invalid_identifier", jsonPath(t, body, "errors", 0, "error_code"))

	for _, k := range []string{InvalidAPIKey, FailValue, ""} {
		status, body = carrierDo(t, srv, carrierCall{method: http.MethodGet, path: "/carriers/carrier_c/v1/carriers", header: map[string]string{"api-key": k}})
		assert.Equal(t, http.StatusUnauthorized, status)
		assert.Equal(t, "unauthorized", jsonPath(t, body, "errors", 0, "error_code"))
		assert.NotEmpty(t, jsonPath(t, body, "request_id"))
	}
}
