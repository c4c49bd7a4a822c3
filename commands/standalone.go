package commands

// standaloneCommands are the server commands of a standalone Redis 7.0
// that this server answers as one with no replicas: MONITOR, WAIT, ROLE.
func standaloneCommands() []*Command {
	return []*Command{
		{Name: "monitor", Arity: 1, Flags: Admin | NoScript | Loading | Stale,
			Categories: []string{"admin", "slow", "dangerous"}, Run: monitorCmd},
	}
}
