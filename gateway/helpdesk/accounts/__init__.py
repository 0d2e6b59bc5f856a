"""People's accounts: sign-in (mailed links, passwords, social sign-in), sessions, workspace signup and its billing."""
