package debug

import (
	"context"

	"github.com/imagectl/imagectl/rayjobs"
)

// NewRayJobs is Options.NewJobs through package rayjobs: Ray's Jobs REST
// API at the dashboard's URL, working_dir and py_modules uploaded as Ray's
// own SDK does.
func NewRayJobs(dashboardURL string) (Jobs, error) {
	c, err := rayjobs.New(dashboardURL)
	if err != nil {
		return nil, err
	}
	return rayJobs{c}, nil
}

type rayJobs struct{ c *rayjobs.Client }

func (j rayJobs) Submit(ctx context.Context, s Submission) (string, error) {
	return j.c.Submit(ctx, rayjobs.SubmitRequest{Entrypoint: s.Entrypoint, SubmissionID: s.SubmissionID, RuntimeEnv: s.RuntimeEnv})
}

func (j rayJobs) Status(ctx context.Context, id string) (string, string, error) {
	d, err := j.c.Job(ctx, id)
	if err != nil {
		return "", "", err
	}
	return string(d.Status), d.Message, nil
}

func (j rayJobs) Logs(ctx context.Context, id string) (string, error) { return j.c.Logs(ctx, id) }
