package store

import (
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// RegisterUUID teaches a connection's type map google/uuid's UUID, the id
// type of every table here. Stock pgx sees uuid.UUID only as a
// driver.Valuer: each argument is turned into a 36-byte string, offered in
// binary format, refused with a formatted error, then sent as text; each
// scanned id is formatted as text and parsed again. With this codec a
// uuid.UUID (and *uuid.UUID, []uuid.UUID, **uuid.UUID through pgx's own
// wrappers) travels as its 16 bytes both ways. Anything else is left to
// pgx's UUIDCodec.
func RegisterUUID(conn *pgx.Conn) {
	conn.TypeMap().RegisterType(&pgtype.Type{Name: "uuid", OID: pgtype.UUIDOID, Codec: uuidCodec{}})
}

type uuidCodec struct{ pgtype.UUIDCodec }

func (c uuidCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	switch value.(type) {
	case uuid.UUID:
		if format == pgtype.BinaryFormatCode {
			return encodeUUIDBinary{}
		}
		return encodeUUIDText{}
	case *uuid.UUID:
		// A pointer (a nullable column such as orders.bridge_id) would
		// otherwise go through its driver.Valuer: a string that fails to
		// encode as binary (an error built with fmt), then is scanned
		// back and encoded again.
		if format == pgtype.BinaryFormatCode {
			return encodeUUIDPtr{encodeUUIDBinary{}}
		}
		return encodeUUIDPtr{encodeUUIDText{}}
	}
	return c.UUIDCodec.PlanEncode(m, oid, format, value)
}

func (c uuidCodec) PlanScan(m *pgtype.Map, oid uint32, format int16, target any) pgtype.ScanPlan {
	if _, ok := target.(*uuid.UUID); ok {
		if format == pgtype.BinaryFormatCode {
			return scanUUIDBinary{}
		}
		return scanUUIDText{}
	}
	return c.UUIDCodec.PlanScan(m, oid, format, target)
}

type encodeUUIDBinary struct{}

func (encodeUUIDBinary) Encode(value any, buf []byte) ([]byte, error) {
	u := value.(uuid.UUID)
	return append(buf, u[:]...), nil
}

// encodeUUIDPtr encodes a *uuid.UUID (nil: NULL) with plan.
type encodeUUIDPtr struct{ plan pgtype.EncodePlan }

func (e encodeUUIDPtr) Encode(value any, buf []byte) ([]byte, error) {
	u := value.(*uuid.UUID)
	if u == nil {
		return nil, nil
	}
	return e.plan.Encode(*u, buf)
}

type encodeUUIDText struct{}

func (encodeUUIDText) Encode(value any, buf []byte) ([]byte, error) {
	u := value.(uuid.UUID)
	for i, b := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			buf = append(buf, '-')
		}
		buf = append(buf, hexDigits[b>>4], hexDigits[b&0x0f])
	}
	return buf, nil
}

const hexDigits = "0123456789abcdef"

// scanUUIDBinary and scanUUIDText leave a uuid.UUID as it is on NULL, as
// uuid.UUID's sql.Scanner does under stock pgx (a nullable column is read
// into a *uuid.UUID).
type scanUUIDBinary struct{}

func (scanUUIDBinary) Scan(src []byte, dst any) error {
	if src == nil {
		return nil
	}
	if len(src) != 16 {
		return fmt.Errorf("invalid length for uuid: %d", len(src))
	}
	copy(dst.(*uuid.UUID)[:], src)
	return nil
}

type scanUUIDText struct{}

func (scanUUIDText) Scan(src []byte, dst any) error {
	if src == nil {
		return nil
	}
	u, err := uuid.ParseBytes(src)
	if err != nil {
		return err
	}
	*dst.(*uuid.UUID) = u
	return nil
}
