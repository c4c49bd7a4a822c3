package commands

// AttachDocs fills COMMAND DOCS for the commands registered in t after the
// server was built, from the same documentation table as the built-in ones
// (proxy mode registers the ONCE commands itself).
func AttachDocs(t *Table) { t.attachDocs() }
