package worker

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/api/serviceerror"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/bridgetasks"
	"github.com/fos-dev/fos/domain"
)

var _ bridgetasks.Schedules = TemporalBridgeTasks{}

// SyncSchedule implements bridgetasks.Schedules: the Temporal Schedule of
// sc (activities.SyncSchedule), its fires on TaskQueue. A spec Temporal
// refuses is invalid naming cron or timezone; any other failure is
// unavailable.
func (t TemporalBridgeTasks) SyncSchedule(ctx context.Context, sc bridgetasks.Schedule) (*time.Time, error) {
	res, err := activities.SyncSchedule(ctx, t.Client, t.TaskQueue, sc)
	if err == nil {
		return res.Next, nil
	}
	var invalid *serviceerror.InvalidArgument
	if errors.As(err, &invalid) {
		field := "cron"
		if strings.Contains(strings.ToLower(invalid.Error()), "zone") {
			field = "timezone"
		}
		e := domain.InvalidField(field, "is refused by the scheduler: "+invalid.Error())
		e.Err = err
		return nil, e
	}
	return nil, domain.WorkflowsUnavailable(err)
}

// DeleteSchedule implements bridgetasks.Schedules.
func (t TemporalBridgeTasks) DeleteSchedule(ctx context.Context, id uuid.UUID) error {
	_, err := activities.DeleteTemporalSchedule(ctx, t.Client, id.String())
	return err
}
