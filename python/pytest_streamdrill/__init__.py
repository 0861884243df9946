"""pytest-streamdrill: streamdrill drills as pytest test items."""
