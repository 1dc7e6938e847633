"""The user guide's pages: a package only so that they ship with EdgeStudio (Help › User guide)."""
