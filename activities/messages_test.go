package activities

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/platforms"
)

// refusedErr is a real connection-refused error, with its IP:port.
func refusedErr(t *testing.T) (error, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	_, err = (&http.Client{}).Get("http://" + addr + "/v1/rates")
	require.Error(t, err)
	require.Contains(t, err.Error(), addr)
	return err, addr
}

func TestTenantMessageDropsInternals(t *testing.T) {
	refused, addr := refusedErr(t)
	for name, err := range map[string]error{
		"bare":           refused,
		"wrapped":        fmt.Errorf("rate: %w", refused),
		"carrier":        &carriers.Error{Carrier: carriers.CarrierB, Code: carriers.ErrCodeNetwork, Message: "carrier unreachable: " + refused.Error(), Retryable: true},
		"platform":       &platforms.Error{Code: platforms.CodeNetwork, Message: "platform unreachable: " + refused.Error()},
		"platform other": &platforms.Error{Code: platforms.CodePlatformError, Message: "upstream said: " + refused.Error()},
		"app error":      temporal.NewApplicationError("carrier_b is unavailable: "+refused.Error(), "X"),
		"json":           errors.New("bad_response: json: cannot unmarshal string into Go value of type float64"),
		"url":            errors.New(`Post "https://apis.internal.example/v1/ship": EOF`),
	} {
		msg := TenantMessage(err)
		require.NotEmpty(t, msg, name)
		require.NotContains(t, msg, addr, name)
		require.NotContains(t, msg, "127.0.0.1", name)
		require.NotContains(t, msg, "connection refused", name)
		require.NotContains(t, msg, "json:", name)
		require.NotContains(t, msg, "http", name)
		require.Equal(t, msg, TenantText(msg), "a tenant message is stable under TenantText: %s", name)
	}
	require.Equal(t, "the call did not complete in time", TenantMessage(context.DeadlineExceeded))
	require.Equal(t, "", TenantMessage(nil))
}

func TestTenantMessageKeepsBusinessMessages(t *testing.T) {
	refusal := &carriers.Error{Carrier: carriers.CarrierC, StatusCode: 400, Code: "invalid_postal_code", Message: "Invalid postal code 1234X for US"}
	msg := TenantMessage(refusal)
	require.Contains(t, msg, "Invalid postal code 1234X for US")
	require.Contains(t, msg, "invalid_postal_code")
	require.Equal(t, "Pin is invalid or expired..", TenantText("Pin is invalid or expired.."))
	require.Equal(t, "order 1001 not found (order_not_found)", TenantMessage(&platforms.Error{Code: platforms.CodeOrderNotFound, Message: "order 1001 not found"}))
	require.Equal(t, "the registration expired; register the account again", TenantMessage(temporal.NewApplicationError("the registration expired; register the account again", "X")))
	// Times, amounts and references are not mistaken for addresses.
	for _, s := range []string{"pickup window 10:30-14:00 on 2026-11-24", "amount 12.50 USD", "ref 1Z999AA10123456784", "CODE.ERROR: weight exceeds 150 lb"} {
		require.Equal(t, s, TenantText(s))
	}
}
