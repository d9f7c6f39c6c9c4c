package shipping

import (
	"context"
	"crypto/hmac"
	"encoding/base64"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/domain"
)

// Signed label URLs.
//
// A shipment's label_url opens in a browser as shipping APIs serve
// labels: GET /api/v1/labels/{shipmentId}?organization=…&expires=…&signature=…
// needs no credentials; the signature (an HMAC under a key derived from the
// service's key, secrets.Box.Digest) covers the organization, the shipment
// and the expiry, so the link names one label and stops working when it
// expires. The expiry is rounded up to the hour, so the same shipment
// read twice within an hour shows the same link.

// LabelURLTTL is at least how long a label_url stays valid.
const LabelURLTTL = 24 * time.Hour

// labelURLPurpose separates the label signature from the box's other
// digests.
const labelURLPurpose = "shipment label url"

// LabelPath is the path of the signed label endpoint, before the shipment
// id.
const LabelPath = "/api/v1/labels/"

// LabelURL is the signed address of a shipment's label document; nil when
// the shipment has no label.
func (s *Service) LabelURL(sh Shipment) *string {
	if !sh.HasLabel() {
		return nil
	}
	base := strings.TrimRight(s.baseURL, "/")
	if s.secrets == nil {
		u := base + "/api/v1/shipments/" + sh.ID.String() + "/label"
		return &u
	}
	expires := time.Now().Truncate(time.Hour).Add(LabelURLTTL + time.Hour).Unix()
	q := url.Values{}
	q.Set("organization", sh.OrganizationID.String())
	q.Set("expires", strconv.FormatInt(expires, 10))
	q.Set("signature", s.labelSignature(sh.OrganizationID, sh.ID, expires))
	u := base + LabelPath + sh.ID.String() + "?" + q.Encode()
	return &u
}

func (s *Service) labelSignature(orgID, shipmentID uuid.UUID, expires int64) string {
	mac := s.secrets.Digest(labelURLPurpose, orgID.String()+"|"+shipmentID.String()+"|"+strconv.FormatInt(expires, 10))
	return base64.RawURLEncoding.EncodeToString(mac)
}

// SignedLabelInput is what a signed label URL carries.
type SignedLabelInput struct {
	ShipmentID     uuid.UUID
	OrganizationID string
	Expires        string
	Signature      string
	// Piece is the ?piece=N of a multi-package label ("" for the default).
	Piece string
}

// SignedLabel serves the label of a signed URL, to anyone holding it: a
// signature that does not verify is Forbidden, an expired link Gone
// (fetch the shipment again for a fresh label_url).
func (s *Service) SignedLabel(ctx context.Context, in SignedLabelInput) (LabelFile, error) {
	invalid := domain.Forbidden("the label link is not valid")
	if s.secrets == nil {
		return LabelFile{}, invalid
	}
	orgID, err := uuid.Parse(in.OrganizationID)
	if err != nil {
		return LabelFile{}, invalid
	}
	expires, err := strconv.ParseInt(in.Expires, 10, 64)
	if err != nil {
		return LabelFile{}, invalid
	}
	want := s.labelSignature(orgID, in.ShipmentID, expires)
	if !hmac.Equal([]byte(want), []byte(in.Signature)) {
		return LabelFile{}, invalid
	}
	if time.Now().Unix() > expires {
		return LabelFile{}, domain.Gone("the label link expired; read the shipment again for a new label_url")
	}
	return s.labelFile(ctx, orgID, in.ShipmentID, in.Piece)
}
