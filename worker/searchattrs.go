package worker

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
)

// SearchAttributes are the custom search attributes the workflows use.
var SearchAttributes = map[string]enumspb.IndexedValueType{
	OrganizationIDKey.GetName(): enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	BridgeIDKey.GetName():       enumspb.INDEXED_VALUE_TYPE_KEYWORD,
	TaskNameKey.GetName():       enumspb.INDEXED_VALUE_TYPE_KEYWORD,
}

// MissingSearchAttributes returns the names of the custom search
// attributes the namespace lacks (sorted). An attribute that exists with
// another type is an error. When the caller may not list search attributes
// (Temporal Cloud API keys without operator rights), each one is probed
// with a visibility query instead, which fails for an unknown attribute.
func MissingSearchAttributes(ctx context.Context, c client.Client, namespace string) ([]string, error) {
	list, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	var denied *serviceerror.PermissionDenied
	var unimplemented *serviceerror.Unimplemented
	if errors.As(err, &denied) || errors.As(err, &unimplemented) {
		return probeSearchAttributes(ctx, c, namespace)
	}
	if err != nil {
		return nil, fmt.Errorf("list Temporal search attributes: %w", err)
	}
	var missing []string
	for name, typ := range SearchAttributes {
		have, ok := list.GetCustomAttributes()[name]
		if !ok {
			have, ok = list.GetSystemAttributes()[name]
		}
		switch {
		case !ok:
			missing = append(missing, name)
		case have != typ:
			return nil, fmt.Errorf("search attribute %s exists in Temporal namespace %q with type %s, want %s", name, namespace, have, typ)
		}
	}
	sort.Strings(missing)
	return missing, nil
}

func probeSearchAttributes(ctx context.Context, c client.Client, namespace string) ([]string, error) {
	var missing []string
	for name := range SearchAttributes {
		_, err := c.WorkflowService().CountWorkflowExecutions(ctx, &workflowservice.CountWorkflowExecutionsRequest{
			Namespace: namespace,
			Query:     name + ` = "fos-probe"`,
		})
		var invalid *serviceerror.InvalidArgument
		switch {
		case errors.As(err, &invalid):
			missing = append(missing, name)
		case err != nil:
			return nil, fmt.Errorf("check Temporal search attribute %s: %w", name, err)
		}
	}
	sort.Strings(missing)
	return missing, nil
}

// EnsureSearchAttributes registers the custom search attributes in the
// namespace. It is idempotent: attributes that already exist are left as
// they are. An attribute that exists with another type, or that is missing
// and cannot be registered, is an error whose text says how to register it.
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	missing, err := MissingSearchAttributes(ctx, c, namespace)
	if err != nil || len(missing) == 0 {
		return err
	}
	add := map[string]enumspb.IndexedValueType{}
	for _, name := range missing {
		add[name] = SearchAttributes[name]
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        namespace,
		SearchAttributes: add,
	})
	var exists *serviceerror.AlreadyExists
	if err != nil && !errors.As(err, &exists) {
		var how []string
		for _, name := range missing {
			how = append(how, fmt.Sprintf("temporal operator search-attribute create --namespace %s --name %s --type %s",
				namespace, name, typeName(SearchAttributes[name])))
		}
		return fmt.Errorf("the Temporal namespace %q lacks the search attribute(s) %s and fos could not register them (%v); register them once (Temporal Cloud: in the namespace settings): %s",
			namespace, strings.Join(missing, ", "), err, strings.Join(how, "; "))
	}
	return nil
}

// typeName is the CLI's name of a search attribute type (Keyword, Int...).
func typeName(t enumspb.IndexedValueType) string {
	n := strings.ToLower(strings.TrimPrefix(t.String(), "INDEXED_VALUE_TYPE_"))
	return strings.ToUpper(n[:1]) + n[1:]
}
