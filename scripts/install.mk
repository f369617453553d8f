# placeholder: install targets
