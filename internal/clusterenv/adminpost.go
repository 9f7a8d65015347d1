package clusterenv

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// AdminPost sends POST path with the JSON body to n's admin API with the admin
// token, as an operator's command would, and returns the answer's status and
// body (up to 64 KiB).
func (c *Cluster) AdminPost(ctx context.Context, n *Node, path, body string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+n.APIAddr+path, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+c.AdminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.admin.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("%w: POST %s on %s: %w", ErrAdminAPI, path, n.ID, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, string(b), err
}
