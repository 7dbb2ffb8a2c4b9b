// Package introspect describes the command table to clients: COMMAND and
// its subcommands (COUNT, INFO, DOCS, LIST, GETKEYS, GETKEYSANDFLAGS,
// HELP), the Redis flags, ACL categories and key specs of the commands
// that do not declare their own in their entries (Specs), and the docs of
// COMMAND DOCS (Docs).
package introspect
