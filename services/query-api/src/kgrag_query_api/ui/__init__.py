"""The web app served at /ui."""
