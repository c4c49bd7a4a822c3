package commands

// commandCommands is the COMMAND family (COUNT, INFO, DOCS, LIST, GETKEYS).
func commandCommands() []*Command { return nil }

// attachDocs fills each command's Doc from the docs table.
func (t *Table) attachDocs() {}
