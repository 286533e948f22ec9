
_seen = set()


def warning_once(logger, message):
    if message not in _seen:
        _seen.add(message)
        logger.warning(message)
