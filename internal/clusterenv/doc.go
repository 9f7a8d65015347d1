// Package clusterenv runs real reaper nodes for the programs that exercise them
// from outside, such as the bench (`make bench`, part G): child processes in
// their own process groups with their logs followed line by line, a redis-server
// that can be killed and restarted on its address, the nodes' configuration
// files, a Raft cluster of nodes and its admin API.
//
// It knows nothing of the platform: the caller runs the fake Clever Cloud and
// gives its URL and token in Params.
package clusterenv
