"""Option types several commands and the work below them share: values checked as they are parsed, the screen."""
