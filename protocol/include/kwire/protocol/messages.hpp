// Every message declaration, the frame helpers that encode and decode them,
// and the error codes their responses carry.
#pragma once

#include "kwire/protocol/errors.hpp"
#include "kwire/protocol/header.hpp"
#include "kwire/protocol/message.hpp"
#include "kwire/protocol/messages/api_versions.hpp"
#include "kwire/protocol/messages/create_partitions.hpp"
#include "kwire/protocol/messages/create_topics.hpp"
#include "kwire/protocol/messages/delete_records.hpp"
#include "kwire/protocol/messages/delete_topics.hpp"
#include "kwire/protocol/messages/fetch.hpp"
#include "kwire/protocol/messages/list_offsets.hpp"
#include "kwire/protocol/messages/metadata.hpp"
#include "kwire/protocol/messages/offset_for_leader_epoch.hpp"
#include "kwire/protocol/messages/produce.hpp"
#include "kwire/protocol/messages/sasl_authenticate.hpp"
#include "kwire/protocol/messages/sasl_handshake.hpp"
