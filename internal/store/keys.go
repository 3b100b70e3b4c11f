package store

// This file is the only place that builds DynamoDB key strings (the layout:
// docs/data-model.md). Every tenant-owned partition key starts with
// ORG#<orgId>; IDs are checked (checkIDs) before a key reaches DynamoDB, so
// '#', the delimiter, never appears inside one.

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/tenantd/tenantd/internal/authz"
)

// Attribute names of the keys.
const (
	attrPK = "pk"
	attrSK = "sk"
)

// Index names and their key attributes.
const (
	gsi1 = "GSI1" // overloaded: a user's orgs, an org's teams and tickets, a user's teams
	gsi2 = "GSI2" // org -> user -> tickets (user item last)
	gsi3 = "GSI3" // org ticket queue by status
	gsi4 = "GSI4" // sparse: tickets by assignee
	gsi5 = "GSI5" // sparse: org -> team -> status -> ticket
	gsi6 = "GSI6" // org -> priority -> status -> ticket
	gsi7 = "GSI7" // sparse: org -> assignee -> status -> ticket
)

// Entity type discriminators, stored in attribute "type" on every item.
const (
	typeOrg        = "Org"
	typeOrgUser    = "OrgUser"
	typeEmailClaim = "EmailClaim"
	typeTeam       = "Team"
	typeMembership = "Membership"
	typeTicket     = "Ticket"
	typeComment    = "Comment"
	typeIdempotent = "IdempotencyRecord"
	typeAudit      = "AuditEvent"
	typeInvitation = "Invitation"
	typeInviteMail = "InvitationEmail"
	typeWebhook    = "Webhook"
	typeDelivery   = "WebhookDelivery"
	typeDue        = "WebhookDue"
	typeCheckpoint = "StreamCheckpoint"
	typeRateLimit  = "RateLimit"
	typeOwnedOrgs  = "OwnedOrgs"
	typeAPIKey     = "APIKey"
	typeServerKey  = "ServerKey"
)

// Sort key constants and prefixes.
const (
	skMetadata = "#METADATA"
	skClaim    = "#CLAIM"

	prefixOrg      = "ORG#"
	prefixUser     = "USER#"
	prefixTeam     = "TEAM#"
	prefixMember   = "MEMBER#"
	prefixTicket   = "TICKET#"
	prefixStatus   = "STATUS#"
	prefixComment  = "COMMENT#"
	prefixEvent    = "EVENT#"
	prefixInvite   = "INVITE#"
	prefixWebhook  = "WEBHOOK#"
	prefixDelivery = "DELIVERY#"
	prefixAPIKey   = "APIKEY#"
)

// key is a primary key.
type key struct{ PK, SK string }

func orgPK(orgID string) string           { return prefixOrg + orgID }
func orgKey(orgID string) key             { return key{orgPK(orgID), skMetadata} }
func userSK(userID string) string         { return prefixUser + userID }
func orgUserKey(orgID, userID string) key { return key{orgPK(orgID), userSK(userID)} }

// userPK is the GSI1 partition of everything a user belongs to.
func userPK(userID string) string { return prefixUser + userID }

// ownedOrgsKey is the count of the orgs a user owns: outside any org.
func ownedOrgsKey(userID string) key { return key{userPK(userID) + "#ORGS", "#OWNED"} }

// orgUserPK is the GSI2 partition of a user and the tickets they requested.
func orgUserPK(orgID, userID string) string { return orgPK(orgID) + "#USER#" + userID }

// claimKey is an email's claim; claimSK its GSI1 sort key under ORG#<orgId>,
// where offboarding finds it.
func claimKey(orgID, normalizedEmail string) key {
	return key{orgPK(orgID) + "#EMAIL#" + normalizedEmail, skClaim}
}
func claimSK(normalizedEmail string) string { return "EMAIL#" + normalizedEmail }

// deletionsPK is the GSI3 partition of unfinished deletions (spanning
// tenants: only the deletion worker reads it); its sort keys name them.
const deletionsPK = "DELETING"

func orgDeletionSK(orgID string) string              { return prefixOrg + orgID }
func teamDeletionSK(orgID, teamID string) string     { return prefixTeam + orgID + "#" + teamID }
func ticketDeletionSK(orgID, ticketID string) string { return prefixTicket + orgID + "#" + ticketID }

// rateLimitKey is the global token bucket of one rate-limit key (policy
// org, user or caller): outside ORG#, as a caller's spans orgs.
func rateLimitKey(policy, id string) key { return key{"LIMIT#" + policy + "#" + id, "#LIMIT"} }

func teamPK(orgID, teamID string) string         { return orgPK(orgID) + "#TEAM#" + teamID }
func teamKey(orgID, teamID string) key           { return key{teamPK(orgID, teamID), skMetadata} }
func teamSK(teamID string) string                { return prefixTeam + teamID }
func memberSK(userID string) string              { return prefixMember + userID }
func memberKey(orgID, teamID, userID string) key { return key{teamPK(orgID, teamID), memberSK(userID)} }

// userTeamSK is a membership's GSI1 sort key; a user's teams in one org
// share the prefix userTeamsPrefix(orgID).
func userTeamSK(orgID, teamID string) string { return userTeamsPrefix(orgID) + teamID }
func userTeamsPrefix(orgID string) string    { return prefixTeam + orgID + "#" }

func ticketPK(orgID, ticketID string) string  { return orgPK(orgID) + "#TICKET#" + ticketID }
func ticketKey(orgID, ticketID string) key    { return key{ticketPK(orgID, ticketID), skMetadata} }
func ticketSK(ticketID string) string         { return prefixTicket + ticketID }
func statusSK(status, ticketID string) string { return statusPrefix(status) + ticketID }
func assigneePK(orgID, userID string) string  { return orgPK(orgID) + "#ASSIGNEE#" + userID }

// statusPrefix is "STATUS#<status>#", or "STATUS#" for every status.
func statusPrefix(status string) string {
	if status == "" {
		return prefixStatus
	}
	return prefixStatus + status + "#"
}

// priorityPK is an org's tickets of one priority (GSI6), by status.
func priorityPK(orgID, priority string) string { return orgPK(orgID) + "#PRIORITY#" + priority }

// teamTicketsPK is a ticket's GSI5 partition: the team's partition string,
// in another index.
func teamTicketsPK(orgID, teamID string) string { return teamPK(orgID, teamID) }

func commentSK(commentID string) string { return prefixComment + commentID }
func commentKey(orgID, ticketID, commentID string) key {
	return key{ticketPK(orgID, ticketID), commentSK(commentID)}
}

// idempotencyKey is a replayable response's: under the org (else the
// caller), by a hash of caller and Idempotency-Key, so the client's key never
// reaches a key string and no two callers share a record.
func idempotencyKey(orgID, userID, clientKey string) key {
	h := sha256.Sum256([]byte(userID + "\x00" + clientKey))
	scope := userPK(userID)
	if orgID != "" {
		scope = orgPK(orgID)
	}
	return key{scope + "#IDEMPOTENCY#" + hex.EncodeToString(h[:]), "#IDEMPOTENCY"}
}

// auditPK is the org's audit bucket for the month of t (auditBucket, yyyy-mm):
// buckets keep any one partition bounded however long the org lives.
func auditPK(orgID string, t time.Time) string  { return auditBucketPK(orgID, auditBucket(t)) }
func auditBucketPK(orgID, bucket string) string { return orgPK(orgID) + "#AUDIT#" + bucket }
func auditBucket(t time.Time) string            { return t.UTC().Format("2006-01") }
func auditSK(eventID string) string             { return prefixEvent + eventID }

// invitationKey is an invitation's own partition, outside the org's users.
func invitationKey(orgID, invitationID string) key {
	return key{orgPK(orgID) + "#INVITE#" + invitationID, "#INVITE"}
}

// apiKeyKey is an API key's own partition (an org's keys are read by the
// authorization read, one at a time), listed in GSI1 under ORG#<orgId>
// (apiKeySK), where offboarding finds it.
func apiKeyKey(orgID, keyID string) key { return key{orgPK(orgID) + "#APIKEY#" + keyID, "#APIKEY"} }
func apiKeySK(keyID string) string      { return prefixAPIKey + keyID }

// actorKey is the item a write's actor fence proves: the caller's OrgUser
// edge, or, for an API key's actor ("apiKey:<keyId>"), the key.
func actorKey(orgID, userID string) key {
	if keyID, ok := strings.CutPrefix(userID, authz.KeyActorPrefix); ok {
		return apiKeyKey(orgID, keyID)
	}
	return orgUserKey(orgID, userID)
}

// actorGone is the error of a write whose actor's item (actorKey) is gone:
// for an API key, revoked while the write ran (401, as its next request
// gets), else person, the error a person's lost edge answers.
func actorGone(userID string, person error) error {
	if strings.HasPrefix(userID, authz.KeyActorPrefix) {
		return authz.ErrKeyRevoked
	}
	return person
}

// invitationEmailKey points from an email to its pending invitation, so a
// new invitation for the same email replaces the old one; it is in GSI1
// under ORG#<orgId> (invitationEmailGSI1SK), where offboarding finds it.
func invitationEmailKey(orgID, normalizedEmail string) key {
	return key{orgPK(orgID) + "#INVITEEMAIL#" + normalizedEmail, "#INVITE"}
}
func invitationEmailGSI1SK(normalizedEmail string) string { return "EMAILINVITE#" + normalizedEmail }

// webhookPK is a subscription's own partition, with its deliveries; webhookSK
// lists it in GSI1 under ORG#<orgId>, where offboarding finds it.
func webhookPK(orgID, webhookID string) string { return orgPK(orgID) + "#WEBHOOK#" + webhookID }
func webhookKey(orgID, webhookID string) key   { return key{webhookPK(orgID, webhookID), skMetadata} }
func webhookSK(webhookID string) string        { return prefixWebhook + webhookID }

func deliveryKey(orgID, webhookID, eventID string) key {
	return key{webhookPK(orgID, webhookID), prefixDelivery + eventID}
}

// deliveryGSI1SK is a delivery's GSI1 sort key under ORG#<orgId>, so
// offboarding finds a deleted subscription's deliveries too.
func deliveryGSI1SK(webhookID, eventID string) string {
	return "WHDELIVERY#" + webhookID + "#" + eventID
}

// dueShardPK is one of webhook.Shards GSI3 partitions of the endpoints with
// deliveries due (spanning tenants: only the delivery workers read them).
func dueShardPK(shard int) string { return fmt.Sprintf("WEBHOOKDUE#%d", shard) }

// dueSK orders a shard's endpoints by when their earliest delivery is due
// (epoch ms, zero padded), then names the endpoint.
func dueSK(at time.Time, orgID, webhookID string) string {
	return fmt.Sprintf("%013d#%s#%s", at.UnixMilli(), orgID, webhookID)
}

// dueKey is an endpoint's WebhookDue item; dueGSI1SK lists it under
// ORG#<orgId> for offboarding.
func dueKey(orgID, webhookID string) key { return key{webhookPK(orgID, webhookID), "#DUE"} }
func dueGSI1SK(webhookID string) string  { return "WHDUE#" + webhookID }

// queuePK is the GSI3 partition of one endpoint's pending deliveries.
func queuePK(orgID, webhookID string) string { return "WEBHOOKQUEUE#" + orgID + "#" + webhookID }

// queueSK orders an endpoint's pending deliveries by when they were queued.
func queueSK(at time.Time, eventID string) string {
	return fmt.Sprintf("%013d#%s", at.UnixMilli(), eventID)
}

// streamCheckpointPK is the partition of the local stream reader's
// checkpoints, one per shard (no tenant's).
const streamCheckpointPK = "WEBHOOKSTREAM"

func checkpointSK(shardID string) string { return "SHARD#" + shardID }

// serverKeyKey is the server key of the API keys' MACs: no tenant's, read
// once by each process that mints or checks a key's token.
var serverKeyKey = key{"SERVERKEY", "#APIKEYMAC"}
