package worker

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
)

// SearchAttributes are the custom search attributes the workflows use.
var SearchAttributes = map[string]enumspb.IndexedValueType{
	OrganizationIDKey.GetName(): enumspb.INDEXED_VALUE_TYPE_KEYWORD,
}

// EnsureSearchAttributes registers the custom search attributes in the
// namespace. It is idempotent: attributes that already exist are left as
// they are. An attribute that exists with another type is an error.
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	ops := c.OperatorService()
	list, err := ops.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return fmt.Errorf("list Temporal search attributes: %w", err)
	}
	missing := map[string]enumspb.IndexedValueType{}
	for name, typ := range SearchAttributes {
		have, ok := list.GetCustomAttributes()[name]
		if !ok {
			have, ok = list.GetSystemAttributes()[name]
		}
		switch {
		case !ok:
			missing[name] = typ
		case have != typ:
			return fmt.Errorf("search attribute %s exists in Temporal with type %s, want %s", name, have, typ)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	_, err = ops.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        namespace,
		SearchAttributes: missing,
	})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("add Temporal search attributes: %w", err)
	}
	return nil
}
