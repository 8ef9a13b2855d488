// Cluster and configuration admin messages: DescribeCluster, DescribeConfigs,
// IncrementalAlterConfigs, ListConfigResources, DeleteGroups, the ACL APIs
// (DescribeAcls, CreateAcls, DeleteAcls), ElectLeaders and DescribeLogDirs.
//
// Input: int16 selecting the API (modulo the number of APIs below), int16
// selecting the version (modulo the declared range), then the bytes decoded
// as that API's response and request body. Whatever decodes must re-encode to
// bytes that decode to an equal value, consume every byte, and match the
// encoder's size count.
#include <cstddef>
#include <cstdint>
#include <tuple>

#include "fuzz_common.hpp"
#include "kwire/protocol/messages.hpp"
#include "message_fuzz.hpp"

namespace {

using namespace kwire::protocol;

using kwire::fuzz::Api;

using Apis = std::tuple<Api<DescribeClusterRequest, DescribeClusterResponse>,                  //
                        Api<DescribeConfigsRequest, DescribeConfigsResponse>,                  //
                        Api<IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse>,  //
                        Api<ListConfigResourcesRequest, ListConfigResourcesResponse>,          //
                        Api<DeleteGroupsRequest, DeleteGroupsResponse>,                        //
                        Api<DescribeAclsRequest, DescribeAclsResponse>,                        //
                        Api<CreateAclsRequest, CreateAclsResponse>,                            //
                        Api<DeleteAclsRequest, DeleteAclsResponse>,                            //
                        Api<ElectLeadersRequest, ElectLeadersResponse>,                        //
                        Api<DescribeLogDirsRequest, DescribeLogDirsResponse>>;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  kwire::fuzz::Input in(data, size);
  const std::uint16_t selector = in.u16();
  const std::uint16_t version_selector = in.u16();
  kwire::fuzz::run_api_at<Apis>(selector % std::tuple_size_v<Apis>, version_selector, in.rest());
  return 0;
}
