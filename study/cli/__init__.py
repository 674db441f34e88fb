"""The command line: its parser (parser.py) and one function per subcommand (commands.py)."""
