package carriers

import (
	"context"
	"net/http"
	"net/url"
)

// FindLabel implements LabelFinder for carrier_b: GET
// /api/track/v1/reference/details/{referenceNumber} finds the shipment
// bought with a shipper reference (CreateLabel sends LabelRequest.Reference
// as the shipment's ReferenceNumber, cut to the carrier's 35 characters).
// found is false when the carrier knows no shipment with that reference
// (an unknown inquiry: 404, or the TW0001 warning without packages).
func (b *carrierB) FindLabel(ctx context.Context, acct Account, reference string) (string, bool, error) {
	ref := truncate(trimSpace(reference), 35)
	if ref == "" {
		return "", false, invalidRequest(CarrierB, "reference is required")
	}
	var out struct {
		TrackResponse struct {
			Shipment []struct {
				Package []struct {
					TrackingNumber string `json:"trackingNumber"`
				} `json:"package"`
			} `json:"shipment"`
		} `json:"trackResponse"`
	}
	q := url.Values{"locale": {"en_US"}}
	resp, err := b.send(ctx, acct, http.MethodGet, "/api/track/v1/reference/details/"+url.PathEscape(ref)+"?"+q.Encode(), nil, &out, true)
	if err != nil {
		return "", false, err
	}
	if resp.status == http.StatusNotFound {
		return "", false, nil
	}
	for _, sh := range out.TrackResponse.Shipment {
		for _, p := range sh.Package {
			if p.TrackingNumber != "" {
				return p.TrackingNumber, true, nil
			}
		}
	}
	return "", false, nil
}
