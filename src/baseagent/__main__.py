from baseagent.early import entry

entry()
