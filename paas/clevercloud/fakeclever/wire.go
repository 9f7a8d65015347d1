package fakeclever

import (
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The JSON shapes of the API, as the reference page describes them. They are the
// fake's own, not shared with the driver, so a shape mistake cannot hide in both.

type jsonFlavor struct {
	Name            string  `json:"name"`
	Mem             int     `json:"mem"`
	CPUs            int     `json:"cpus"`
	GPUs            int     `json:"gpus"`
	Disk            *int    `json:"disk"`
	Price           float64 `json:"price"`
	Available       bool    `json:"available"`
	Microservice    bool    `json:"microservice"`
	MachineLearning bool    `json:"machine_learning"`
	Nice            int     `json:"nice"`
	PriceID         string  `json:"price_id"`
}

type jsonVariant struct {
	ID         string `json:"id"`
	Slug       string `json:"slug"`
	Name       string `json:"name"`
	DeployType string `json:"deployType"`
}

type jsonInstanceConf struct {
	Type                string       `json:"type"`
	Version             string       `json:"version"`
	Variant             jsonVariant  `json:"variant"`
	MinInstances        int          `json:"minInstances"`
	MaxInstances        int          `json:"maxInstances"`
	MaxAllowedInstances int          `json:"maxAllowedInstances"`
	MinFlavor           jsonFlavor   `json:"minFlavor"`
	MaxFlavor           jsonFlavor   `json:"maxFlavor"`
	Flavors             []jsonFlavor `json:"flavors"`
	Lifetime            string       `json:"lifetime"`
}

type jsonDeploymentConf struct {
	Shutdownable bool   `json:"shutdownable"`
	Type         string `json:"type"`
	RepoState    string `json:"repoState"`
	URL          string `json:"url"`
	HTTPURL      string `json:"httpUrl"`
}

type jsonVHost struct {
	FQDN string `json:"fqdn"`
}

type jsonApp struct {
	ID             string             `json:"id"`
	Name           string             `json:"name"`
	Description    string             `json:"description"`
	Zone           string             `json:"zone"`
	Instance       jsonInstanceConf   `json:"instance"`
	Deployment     jsonDeploymentConf `json:"deployment"`
	VHosts         []jsonVHost        `json:"vhosts"`
	CreationDate   int64              `json:"creationDate"`
	LastDeploy     int                `json:"last_deploy"`
	Archived       bool               `json:"archived"`
	StickySessions bool               `json:"stickySessions"`
	Homogeneous    bool               `json:"homogeneous"`
	Favourite      bool               `json:"favourite"`
	CancelOnPush   bool               `json:"cancelOnPush"`
	WebhookURL     *string            `json:"webhookUrl"`
	WebhookSecret  *string            `json:"webhookSecret"`
	SeparateBuild  bool               `json:"separateBuild"`
	BuildFlavor    *jsonFlavor        `json:"buildFlavor"`
	OwnerID        string             `json:"ownerId"`
	State          string             `json:"state"`
	CommitID       *string            `json:"commitId"`
	Appliance      *string            `json:"appliance"`
	Branch         string             `json:"branch"`
	ForceHTTPS     string             `json:"forceHttps"`
	Env            []any              `json:"env"`
}

type jsonSummaryApp struct {
	ID           string  `json:"id"`
	Name         string  `json:"name"`
	State        string  `json:"state"`
	CommitID     *string `json:"commitId"`
	VariantSlug  string  `json:"variantSlug"`
	InstanceType string  `json:"instanceType"`
}

type jsonSummaryOwner struct {
	ID           string           `json:"id"`
	Name         string           `json:"name"`
	Email        string           `json:"email,omitempty"`
	Avatar       *string          `json:"avatar"`
	Applications []jsonSummaryApp `json:"applications"`
	Addons       []any            `json:"addons"`
	Consumers    []any            `json:"consumers"`
	Providers    []any            `json:"providers"`
	CanPay       bool             `json:"canPay"`
	Role         string           `json:"role,omitempty"`
}

type jsonSummary struct {
	User          jsonSummaryOwner   `json:"user"`
	Organisations []jsonSummaryOwner `json:"organisations"`
}

type jsonSelf struct {
	ID             string  `json:"id"`
	Email          string  `json:"email"`
	Name           string  `json:"name"`
	Phone          string  `json:"phone"`
	Address        string  `json:"address"`
	City           string  `json:"city"`
	Zipcode        string  `json:"zipcode"`
	Country        string  `json:"country"`
	Avatar         *string `json:"avatar"`
	CreationDate   int64   `json:"creationDate"`
	Lang           string  `json:"lang"`
	EmailValidated bool    `json:"emailValidated"`
	Admin          bool    `json:"admin"`
	CanPay         bool    `json:"canPay"`
	HasPassword    bool    `json:"hasPassword"`
}

type jsonInstance struct {
	ID             string     `json:"id"`
	AppID          string     `json:"appId"`
	IP             string     `json:"ip"`
	AppPort        int        `json:"appPort"`
	State          string     `json:"state"`
	Flavor         jsonFlavor `json:"flavor"`
	Commit         string     `json:"commit"`
	DeployNumber   int        `json:"deployNumber"`
	DeployID       string     `json:"deployId"`
	InstanceNumber int        `json:"instanceNumber"`
	DisplayName    string     `json:"displayName"`
	CreationDate   int64      `json:"creationDate"`
}

type jsonAuthor struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type jsonDeployment struct {
	ID        int        `json:"id"`
	UUID      string     `json:"uuid"`
	Date      int64      `json:"date"`
	State     string     `json:"state"`
	Action    string     `json:"action"`
	Commit    string     `json:"commit"`
	Cause     *string    `json:"cause"`
	Instances int        `json:"instances"`
	Author    jsonAuthor `json:"author"`
}

type jsonV2Message struct {
	ID           int            `json:"id"`
	Message      string         `json:"message"`
	Type         string         `json:"type"`
	Fields       map[string]any `json:"fields,omitempty"`
	DeploymentID string         `json:"deploymentId,omitempty"`
}

type jsonV4Error struct {
	APIRequestID string         `json:"apiRequestId"`
	Code         string         `json:"code"`
	Context      map[string]any `json:"context"`
	Error        string         `json:"error"`
}

type jsonPrice struct {
	Source   string  `json:"source"`
	Flavor   string  `json:"flavor"`
	TimeUnit string  `json:"time_unit"`
	Price    float64 `json:"price"`
	SlugID   string  `json:"slug_id"`
}

type jsonPriceSystem struct {
	ID        string      `json:"id"`
	ZoneID    string      `json:"zone_id"`
	Currency  string      `json:"currency"`
	StartedAt string      `json:"started_at"`
	Runtime   []jsonPrice `json:"runtime"`
	Countable []any       `json:"countable"`
}

// flavors are the instance sizes, with an hourly price in EUR.
var flavors = []struct {
	name  string
	mem   int
	cpus  int
	price float64
}{
	{"pico", 256, 1, 0.0060}, {"nano", 512, 1, 0.0101}, {"XS", 1024, 1, 0.0278}, {"S", 2048, 2, 0.0556},
	{"M", 4096, 4, 0.1111}, {"L", 8192, 6, 0.2222}, {"XL", 16384, 8, 0.4444}, {"2XL", 24576, 12, 0.8889},
	{"3XL", 32768, 16, 1.3333},
}

// zones are the zones the price system knows.
var zones = []string{"par", "parhds", "rbx", "rbxhds", "scw", "grahds", "ldn", "mtl", "sgp", "syd", "wsw"}

func flavorJSON(name string) jsonFlavor {
	for _, fl := range flavors {
		if strings.EqualFold(fl.name, name) {
			return jsonFlavor{Name: fl.name, Mem: fl.mem, CPUs: fl.cpus, Price: fl.price,
				Available: true, PriceID: "apps." + fl.name}
		}
	}
	return jsonFlavor{Name: name, Available: true, PriceID: "apps." + name}
}

func epochMS(t time.Time) int64 { return t.UnixMilli() }

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeV2Error writes a v2 error body {id, message, type: "error", fields}.
func writeV2Error(w http.ResponseWriter, status, id int, msg string) {
	writeJSON(w, status, jsonV2Message{ID: id, Message: msg, Type: "error", Fields: map[string]any{}})
}

// writeV4Error writes a v4 error body {apiRequestId, code, context, error}.
func writeV4Error(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, jsonV4Error{APIRequestID: newUUID(), Code: code, Context: map[string]any{}, Error: msg})
}

func writeNeverDeployed(w http.ResponseWriter) {
	writeV2Error(w, http.StatusBadRequest, 4014, "The application has never been deployed: push your code to deploy it first")
}

// writeLocked is the fake's answer for an app locked by another operation (see the
// package doc: the reference gives no code for it).
func writeLocked(w http.ResponseWriter) {
	writeV2Error(w, http.StatusConflict, 409, "The application is locked: another operation (a deployment) is in progress")
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func fakeCommit(n int) string {
	sum := sha1.Sum([]byte(fmt.Sprintf("fake commit %d", n)))
	return hex.EncodeToString(sum[:])
}

// statusRecorder remembers the status written, for the call log.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Flush() {
	if fl, ok := s.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection (websockets through
// a backend proxy).
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
