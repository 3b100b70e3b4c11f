// Package deploy holds tenantd's deployment files; its tests check them against the code.
package deploy
